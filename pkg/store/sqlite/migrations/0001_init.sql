-- Conversations and their messages. Times are Unix milliseconds.
CREATE TABLE conversations (
    id           TEXT    NOT NULL PRIMARY KEY,
    name         TEXT    NOT NULL DEFAULT '',
    chat_type    TEXT    NOT NULL DEFAULT '',
    user_id      TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    -- last_turn_id is the conversation's turn counter: AppendTurn increments
    -- it in the transaction that writes the turn, which serialises turn id
    -- allocation per conversation.
    last_turn_id INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX conversations_by_updated ON conversations (updated_at DESC, created_at DESC, id DESC);
CREATE INDEX conversations_by_user ON conversations (user_id, updated_at DESC, created_at DESC, id DESC);

CREATE TABLE messages (
    id              TEXT    NOT NULL PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id         INTEGER NOT NULL,
    -- seq is 0 for a turn's question and 1 for its answer.
    seq             INTEGER NOT NULL CHECK (seq IN (0, 1)),
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    timestamp       INTEGER NOT NULL,
    metadata        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    UNIQUE (conversation_id, turn_id, seq),
    UNIQUE (conversation_id, turn_id, role)
) STRICT;
