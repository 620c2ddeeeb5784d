-- Conversation memory: what background compression derived from a
-- conversation's turns (summary, entity facts, triples), its system
-- messages, and when it was last closed; and each user's long-term memory.
-- The turns themselves stay in messages, untouched by compression.
CREATE TABLE memory_state (
    conversation_id      TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    summary              TEXT   NOT NULL DEFAULT '',
    -- through: the last turn the summary covers.
    through              BIGINT NOT NULL DEFAULT 0,
    entities             JSONB  NOT NULL DEFAULT '[]',
    triples              JSONB  NOT NULL DEFAULT '[]',
    extracted_through    BIGINT NOT NULL DEFAULT 0,
    digest_updated_at    BIGINT NOT NULL DEFAULT 0,
    -- system: a JSON array of strings; NULL until set.
    system               JSONB,
    closed_at            BIGINT NOT NULL DEFAULT 0,
    consolidated_through BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE user_memory (
    user_id    TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    summary    TEXT   NOT NULL DEFAULT '',
    facts      JSONB  NOT NULL DEFAULT '[]',
    version    BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
