-- 005_quota_return.sql -- leases given back before the sweep would take
-- them: by a worker that ends (a reload, a stop), and by the workers a
-- short one asks for the room their leases hold.
--
-- A worker short of room for a write calls siftp_quota_ask(): if other
-- workers hold room in their leases, it tells them on "siftp_quota" as
-- "NAME ask" and answers true; each of them that does not need its
-- lease gives it back with siftp_quota_leave(), which is told there as
-- "NAME room", and the short worker asks for its lease again.  A worker
-- that ends gives every lease back the same way before it exits.

-- A worker's last report about user nm (as siftp_quota_sync's: spent
-- sb, sf and freed fb, ff under sq) and the end of its lease: the row is
-- deleted, what it held is free for the others.  A report whose lease is
-- gone (swept: the home is counted again; its worker pid now another
-- master's) or that was applied already changes nothing.  Answers as
-- siftp_quota_sync, with no lease.
CREATE FUNCTION siftp_quota_leave(nm text, nd text, mpid integer,
    wpid integer, sq bigint, sb bigint, sf bigint, fb bigint, ff bigint)
RETURNS TABLE (used_bytes bigint, used_files bigint, lease_bytes bigint,
    lease_files bigint, is_counted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    l       siftp_quota_leases%ROWTYPE;     -- the lease that ends
    q       siftp_quota%ROWTYPE;
    was     siftp_quota%ROWTYPE;
BEGIN
    SELECT * INTO q FROM siftp_quota WHERE name = nm FOR UPDATE;

    IF NOT FOUND THEN                       -- no usage: no lease either
        RETURN QUERY SELECT 0::bigint, 0::bigint, 0::bigint, 0::bigint,
            false;
        RETURN;
    END IF;

    was := q;

    DELETE FROM siftp_quota_leases x
     WHERE x.name = nm AND x.node = nd AND x.worker_pid = wpid
       AND x.master_pid = mpid
    RETURNING * INTO l;

    IF FOUND THEN
        IF sq > l.seq THEN
            q.bytes := greatest(q.bytes + sb - fb, 0);
            q.files := greatest(q.files + sf - ff, 0);
            l.bytes := greatest(l.bytes - sb, 0);
            l.files := greatest(l.files - sf, 0);
        END IF;

        UPDATE siftp_quota SET bytes = q.bytes, files = q.files
         WHERE name = nm;

        IF q.bytes <> was.bytes OR q.files <> was.files THEN
            PERFORM pg_notify('siftp_quota', nm || ' ' || CASE WHEN q.counted
                THEN q.bytes || ' ' || q.files ELSE '-1 -1' END);
        END IF;

        IF l.bytes > 0 OR l.files > 0 THEN
            PERFORM pg_notify('siftp_quota', nm || ' room');
        END IF;
    END IF;

    RETURN QUERY SELECT q.bytes, q.files, 0::bigint, 0::bigint, q.counted;
END
$$;

-- Worker (nd, wpid) is short of room for user nm: true if other workers'
-- leases hold some, and then they are asked to give it back.
CREATE FUNCTION siftp_quota_ask(nm text, nd text, wpid integer)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM siftp_quota_leases x
                    WHERE x.name = nm
                      AND NOT (x.node = nd AND x.worker_pid = wpid)
                      AND (x.bytes > 0 OR x.files > 0))
    THEN
        RETURN false;
    END IF;

    PERFORM pg_notify('siftp_quota', nm || ' ask');

    RETURN true;
END
$$;
