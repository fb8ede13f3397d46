-- fslab results database. One campaign = one spec run; its points are planned
-- up front (status 'pending') so an interrupted campaign can be resumed.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS campaigns (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    spec_json      TEXT NOT NULL,   -- the validated spec, after --quick and --set
    spec_toml      TEXT NOT NULL,   -- the source text as given
    overrides_json TEXT NOT NULL,   -- the --set overrides and --quick, to reproduce
    host_json      TEXT NOT NULL,   -- kernel, CPUs, nr_cpu_ids, memory, tool versions
    device_json    TEXT,            -- identity of the target device
    fslab_version  TEXT NOT NULL,
    started_at     TEXT NOT NULL,   -- ISO 8601 UTC
    ended_at       TEXT
);

CREATE TABLE IF NOT EXISTS points (
    id          INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,   -- run order
    config      TEXT NOT NULL,      -- filesystem configuration label
    fs_type     TEXT NOT NULL,
    sweep_json  TEXT NOT NULL,      -- {"numjobs": 64, ...}
    repeat      INTEGER NOT NULL,   -- repetition index, counted per role
    -- clean: no collector ran, a headline repetition; evidence: the collectors
    -- ran, read for diagnosis only; inline: instrumented and a headline
    -- repetition (--collect=inline, and data from before roles existed)
    role        TEXT NOT NULL DEFAULT 'inline' CHECK (role IN ('clean', 'evidence', 'inline')),
    status      TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed')),
    error       TEXT,               -- one-line reason when failed
    stderr      TEXT,               -- the failing tool's stderr
    facts_json  TEXT,               -- mount options read back, fs description, fill, free space
    started_at  TEXT,
    ended_at    TEXT,
    UNIQUE (campaign_id, seq)
);

CREATE TABLE IF NOT EXISTS metrics (
    point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,         -- flat tool.metric name with unit, e.g. fio.write.iops
    value    REAL NOT NULL,
    PRIMARY KEY (point_id, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS artifacts (
    point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,         -- e.g. fio.json, profile.oncpu.folded
    content  TEXT NOT NULL,
    PRIMARY KEY (point_id, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS commands (
    point_id   INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    argv_json  TEXT NOT NULL,
    returncode INTEGER NOT NULL,
    seconds    REAL NOT NULL,
    PRIMARY KEY (point_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS collectors (
    point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,
    status   TEXT NOT NULL CHECK (status IN ('ok', 'unavailable', 'failed')),
    reason   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (point_id, name)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS points_by_campaign ON points (campaign_id, status);
