/*
 * tools_schema.h -- Julia's tools as offered to the LLM: name,
 * description and JSON Schema of the input (executed by the worker).
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_TOOLS_SCHEMA_H
#define MG_TOOLS_SCHEMA_H

#include "llm/llm.h"

/* Fill *out for tool t (enum tool of mode/core.h) with static strings
 * and the schema both as text and as json-c (parsed once and kept for the
 * process: borrowed, shared by every caller). Returns 0, or -1 when t is
 * out of range. */
int	tools_schema_get(int t, struct llm_tool *out) MG_MUSTCHECK;

#endif
