-- 0021_inbox_unlinked_sender.sql -- a doctor's messages are answered in
-- the order they came, across processes.
--
-- Each claim first links new messages to their conversations
-- (mg_link_inbox, FOR UPDATE SKIP LOCKED, so claims of several processes
-- do not wait for each other). A claim could therefore skip a message
-- another process was linking, link the doctor's next one, and claim the
-- conversation without the first: the later message was answered first
-- (1 run in 12-16 of test_two_processes_answer_each_once_in_order under
-- ASan). The claim now passes over a conversation while a message of its
-- doctor is still unlinked (sql/functions/60_turn.sql); this index finds
-- those few rows by sender.
-- SPDX-License-Identifier: MIT

CREATE INDEX inbox_unlinked_sender ON inbox (phone_number_id, sender_key)
	WHERE conversation_id IS NULL;
