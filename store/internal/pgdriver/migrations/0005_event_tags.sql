-- The index of events' tags: one row per tag of a stored event, the
-- primary key in the order a query walks it (a tenant's tag, from a
-- position on). The tags themselves are stored with the event, in its
-- extensions, as the eventlitetags extension; the append writes their
-- rows in its own transaction.
-- Idempotent: a schema set back to an older version runs it again.
CREATE TABLE IF NOT EXISTS event_tags (
    tenant   TEXT COLLATE "C" NOT NULL,
    tag      TEXT COLLATE "C" NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (tenant, tag, position)
);
-- Events stored before tags existed may carry an extension of that name:
-- those whose value decodes as tags (separated by ',', '\' escaping ','
-- and '\', 1 to 32 tags of 1 to 255 bytes, none twice, no control
-- character, no white space at either end) are indexed; doctor reports
-- the others, which no query matches.
INSERT INTO event_tags (tenant, tag, position)
WITH RECURSIVE src (tenant, position, v) AS (
    SELECT tenant, position, extensions::json ->> 'eventlitetags' FROM events
    WHERE extensions IS NOT NULL AND json_typeof(extensions::json -> 'eventlitetags') = 'string'),
walk (tenant, position, rest, cur, tag, bad) AS (
    SELECT tenant, position, v, ''::text, NULL::text, 0 FROM src
    UNION ALL
    SELECT tenant, position,
        CASE WHEN substr(rest, 1, 1) = '\' THEN substr(rest, 3) ELSE substr(rest, 2) END,
        CASE WHEN rest = '' THEN NULL
            WHEN substr(rest, 1, 1) = ',' THEN ''
            WHEN substr(rest, 1, 1) = '\' THEN cur || substr(rest, 2, 1)
            ELSE cur || substr(rest, 1, 1) END,
        CASE WHEN rest = '' OR substr(rest, 1, 1) = ',' THEN cur END,
        CASE WHEN substr(rest, 1, 1) = '\' AND substr(rest, 2, 1) NOT IN (',', '\') THEN 1 ELSE bad END
    FROM walk WHERE cur IS NOT NULL),
split AS (SELECT tenant, position, tag, bad FROM walk WHERE tag IS NOT NULL),
valid AS (
    SELECT tenant, position FROM split GROUP BY tenant, position
    HAVING max(bad) = 0 AND count(*) <= 32 AND count(DISTINCT tag) = count(*)
        AND min(octet_length(tag)) >= 1 AND max(octet_length(tag)) <= 255
        AND bool_and(tag !~ '^\s|\s$') AND bool_and(tag !~ '[\x01-\x1f\x7f-\x9f]'))
SELECT s.tenant, s.tag, s.position FROM split s JOIN valid v ON v.tenant = s.tenant AND v.position = s.position
ON CONFLICT DO NOTHING;
