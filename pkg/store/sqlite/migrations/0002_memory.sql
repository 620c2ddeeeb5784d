-- Conversation memory: what background compression derived from a
-- conversation's turns (summary, entity facts, triples), its system
-- messages, and when it was last closed; and each user's long-term memory.
-- The turns themselves stay in messages, untouched by compression.
CREATE TABLE memory_state (
    conversation_id      TEXT    NOT NULL PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    summary              TEXT    NOT NULL DEFAULT '',
    -- through: the last turn the summary covers.
    through              INTEGER NOT NULL DEFAULT 0,
    entities             TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(entities)),
    triples              TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(triples)),
    extracted_through    INTEGER NOT NULL DEFAULT 0,
    digest_updated_at    INTEGER NOT NULL DEFAULT 0,
    -- system: a JSON array of strings; NULL until set.
    system               TEXT    CHECK (system IS NULL OR json_valid(system)),
    closed_at            INTEGER NOT NULL DEFAULT 0,
    consolidated_through INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE user_memory (
    user_id    TEXT    NOT NULL PRIMARY KEY,
    summary    TEXT    NOT NULL DEFAULT '',
    facts      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(facts)),
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
