-- The index of events' tags: one row per tag of a stored event, the
-- primary key in the order a query walks it (a tenant's tag, from a
-- position on). The tags themselves are stored with the event, in its
-- extensions, as the eventlitetags extension; the append writes their
-- rows in its own transaction.
-- Idempotent: a file set back to an older schema runs it again.
CREATE TABLE IF NOT EXISTS event_tags (
    tenant   TEXT    NOT NULL,
    tag      TEXT    NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (tenant, tag, position)
) WITHOUT ROWID;
-- Events stored before tags existed may carry an extension of that name:
-- those whose value decodes as tags (separated by ',', '\' escaping ','
-- and '\', 1 to 32 tags of 1 to 255 bytes, none twice, no control
-- character, no white space at either end) are indexed; doctor reports
-- the others, which no query matches.
INSERT INTO event_tags (tenant, tag, position)
WITH RECURSIVE src (tenant, position, v) AS (
    SELECT tenant, position, json_extract(x, '$.eventlitetags') FROM (
        SELECT tenant, position, CASE WHEN length(substr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), instr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), x'00') + 1)) > 0 THEN CAST(substr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), instr(substr(substr(attrs, instr(attrs, x'00') + 1), instr(substr(attrs, instr(attrs, x'00') + 1), x'00') + 1), x'00') + 1) AS TEXT) END AS x FROM events WHERE attrs IS NOT NULL)
    WHERE x IS NOT NULL AND json_valid(x) AND json_type(x, '$.eventlitetags') = 'text'),
walk (tenant, position, rest, cur, tag, bad) AS (
    SELECT tenant, position, v, '', NULL, 0 FROM src
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
        AND min(length(CAST(tag AS BLOB))) >= 1 AND max(length(CAST(tag AS BLOB))) <= 255
        AND max(tag <> trim(tag, ' ' || char(9, 10, 11, 12, 13, 133, 160))) = 0
        AND max(tag GLOB ('*[' || char(1) || '-' || char(31) || char(127) || '-' || char(159) || ']*')) = 0
        AND max(instr(tag, char(0))) = 0)
SELECT s.tenant, s.tag, s.position FROM split s JOIN valid v ON v.tenant = s.tenant AND v.position = s.position
WHERE true
ON CONFLICT DO NOTHING;
