-- 0020_outbox_unsent_id.sql -- the sender's claim reads only unsent rows.
--
-- mg_lease_outbox without a conversation (the sender's own claim,
-- sql/functions/40_outbox.sql) takes the oldest due rows in id order.
-- No index held the unsent rows in that order, so PostgreSQL walked the
-- primary key through every row ever sent: a claim's time grew with the
-- table (1.2 ms with 4,000 rows, 7 ms with 12,000, under load).
-- SPDX-License-Identifier: MIT

CREATE INDEX outbox_unsent_id ON outbox (id)
	WHERE state IN ('pending', 'sending');
