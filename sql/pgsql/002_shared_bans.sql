-- 002_shared_bans.sql -- login failures and bans shared by every node on
-- the database (pgsql_shared_bans, on by default with this store).
--
-- A source is what siftpd counts failures of: an IPv4 address, or an IPv6
-- prefix as "2001:db8::/64".  Times are the database's, so the nodes'
-- clocks need not agree.  Every ban and every lifted ban is told to every
-- node on "siftp_bans" as "SOURCE SECONDS FAILURES": the seconds it has
-- left, 0 when lifted.

CREATE TABLE siftp_bans (
    source         text PRIMARY KEY,
    failures       integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    window_start   timestamptz NOT NULL DEFAULT now(),
    banned_until   timestamptz,
    banned_by      text,                       -- the node that banned it
    ban_failures   integer NOT NULL DEFAULT 0  -- the failures that did
);

CREATE FUNCTION siftp_ban(src text, secs integer, n integer, node text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    until timestamptz;
BEGIN
    INSERT INTO siftp_bans AS b (source, banned_until, banned_by,
                                 ban_failures)
    VALUES (src, now() + make_interval(secs => secs), node, n)
    ON CONFLICT (source) DO UPDATE
        SET failures = 0,
            banned_until = greatest(b.banned_until, excluded.banned_until),
            banned_by = excluded.banned_by,
            ban_failures = excluded.ban_failures
    RETURNING banned_until INTO until;

    PERFORM pg_notify('siftp_bans', src || ' '
        || ceil(extract(epoch FROM until - now()))::bigint || ' ' || n);
END
$$;

-- n more failures of src; banned at max (0: never) for secs seconds
CREATE FUNCTION siftp_ban_failed(src text, n integer, win integer,
    max integer, secs integer, node text)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    total integer;
BEGIN
    INSERT INTO siftp_bans AS b (source, failures, window_start)
    VALUES (src, n, now())
    ON CONFLICT (source) DO UPDATE
        SET failures = CASE
                WHEN b.window_start + make_interval(secs => win) <= now()
                THEN n ELSE b.failures + n END,
            window_start = CASE
                WHEN b.window_start + make_interval(secs => win) <= now()
                THEN now() ELSE b.window_start END
    RETURNING failures INTO total;

    IF max > 0 AND total >= max THEN
        PERFORM siftp_ban(src, secs, total, node);
    END IF;

    RETURN total;
END
$$;

CREATE FUNCTION siftp_unban(src text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE siftp_bans SET banned_until = NULL, failures = 0
     WHERE source = src;
    PERFORM pg_notify('siftp_bans', src || ' 0 0');
END
$$;
