-- Conversations and their messages. Times are Unix milliseconds. Ids use the
-- "C" collation so that they sort bytewise, as in SQLite.
CREATE TABLE conversations (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name         TEXT   NOT NULL DEFAULT '',
    chat_type    TEXT   NOT NULL DEFAULT '',
    user_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    -- last_turn_id is the conversation's turn counter: AppendTurn increments
    -- it in the transaction that writes the turn; the row lock this takes
    -- serialises turn id allocation per conversation across processes.
    last_turn_id BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX conversations_by_updated ON conversations (updated_at DESC, created_at DESC, id DESC);
CREATE INDEX conversations_by_user ON conversations (user_id, updated_at DESC, created_at DESC, id DESC);

CREATE TABLE messages (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id         BIGINT   NOT NULL,
    -- seq is 0 for a turn's question and 1 for its answer.
    seq             SMALLINT NOT NULL CHECK (seq IN (0, 1)),
    role            TEXT     NOT NULL,
    content         TEXT     NOT NULL,
    timestamp       BIGINT   NOT NULL,
    metadata        JSONB    NOT NULL DEFAULT '{}',
    UNIQUE (conversation_id, turn_id, seq),
    UNIQUE (conversation_id, turn_id, role)
);
