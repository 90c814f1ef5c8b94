-- 004_shared_quota.sql -- quota usage shared by every node on the database
-- (pgsql_shared_quota, on by default with this store), exact across them.
--
-- siftp_quota holds what a user stores, fleet-wide: set by the first
-- count of the home a node makes ("first count wins"), replaced by an
-- admin's recount, then kept by the reports of the workers.  A worker
-- does not ask the database for every chunk it stores: it holds a lease,
-- a slice of the user's room reserved for it in siftp_quota_leases,
-- spends it on its own, and reports what it spent (moved from the lease
-- to the usage) and what was deleted when it asks for more or gives the
-- rest back.  The usage plus every lease never passes the quota.
--
-- A report carries a sequence number, so that one sent again after a lost
-- answer is applied once.  A lease not renewed for 10 seconds, or whose
-- node's master changed, is a dead worker's: swept by the next report
-- about its user, which is counted again then (what it spent since its
-- last report is not known).  Every change of a user's usage is told on
-- "siftp_quota" as "NAME BYTES FILES", "NAME -1 -1" when it must be
-- counted again.

CREATE TABLE siftp_quota (
    name           text PRIMARY KEY,
    bytes          bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    files          bigint NOT NULL DEFAULT 0 CHECK (files >= 0),
    counted        boolean NOT NULL DEFAULT false
);

CREATE TABLE siftp_quota_leases (
    name           text NOT NULL,
    node           text NOT NULL,
    master_pid     integer NOT NULL,
    worker_pid     integer NOT NULL,
    bytes          bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    files          bigint NOT NULL DEFAULT 0 CHECK (files >= 0),
    seq            bigint NOT NULL DEFAULT 0,
    renewed        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, node, worker_pid)
);

-- A worker's report about user nm and its lease: spent (sb, sf) since its
-- last report, freed (fb, ff) by deletes, the lease it wants left (wb,
-- wf) and the bytes a write of it waits for (nb), the quota (mb, mf; 0:
-- none), a count of the home (cb, cf; NULL: none) and whether it is an
-- admin's recount (rc).  Answers the usage and the lease granted: what
-- the quota leaves after the usage and the other leases, never more, and
-- no more than half of it unless a write waits for more, so that the
-- other nodes find room too.
CREATE FUNCTION siftp_quota_sync(nm text, nd text, mpid integer,
    wpid integer, sq bigint, sb bigint, sf bigint, fb bigint, ff bigint,
    wb bigint, wf bigint, nb bigint, mb bigint, mf bigint, cb bigint,
    cf bigint, rc boolean)
RETURNS TABLE (used_bytes bigint, used_files bigint, lease_bytes bigint,
    lease_files bigint, is_counted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    q       siftp_quota%ROWTYPE;
    l       siftp_quota_leases%ROWTYPE;
    was     siftp_quota%ROWTYPE;
    swept   bigint;
    ob      bigint;
    ofl     bigint;
    rb      bigint;
    rf      bigint;
BEGIN
    INSERT INTO siftp_quota (name) VALUES (nm) ON CONFLICT DO NOTHING;
    SELECT * INTO q FROM siftp_quota WHERE name = nm FOR UPDATE;
    was := q;

    WITH gone AS (
        DELETE FROM siftp_quota_leases x
         WHERE x.name = nm
           AND NOT (x.node = nd AND x.worker_pid = wpid)
           AND (x.renewed < now() - interval '10 seconds'
                OR (x.node = nd AND x.master_pid <> mpid)
                OR EXISTS (SELECT 1 FROM siftp_nodes n
                            WHERE n.name = x.node
                              AND n.master_pid <> x.master_pid))
        RETURNING x.bytes, x.files)
    SELECT count(*) INTO swept FROM gone g WHERE g.bytes > 0 OR g.files > 0;

    IF swept > 0 THEN
        q.counted := false;
    END IF;

    IF cb IS NOT NULL AND (rc OR NOT q.counted) THEN
        q.bytes := greatest(cb, 0);
        q.files := greatest(cf, 0);
        q.counted := true;
    END IF;

    SELECT * INTO l FROM siftp_quota_leases x
     WHERE x.name = nm AND x.node = nd AND x.worker_pid = wpid FOR UPDATE;

    IF NOT FOUND THEN
        INSERT INTO siftp_quota_leases (name, node, master_pid, worker_pid)
        VALUES (nm, nd, mpid, wpid) RETURNING * INTO l;
    END IF;

    IF sq > l.seq THEN
        q.bytes := greatest(q.bytes + sb - fb, 0);
        q.files := greatest(q.files + sf - ff, 0);
        l.bytes := greatest(l.bytes - sb, 0);
        l.files := greatest(l.files - sf, 0);
        l.seq := sq;
    END IF;

    SELECT coalesce(sum(x.bytes), 0), coalesce(sum(x.files), 0)
      INTO ob, ofl FROM siftp_quota_leases x
     WHERE x.name = nm AND NOT (x.node = nd AND x.worker_pid = wpid);

    rb := greatest(mb - q.bytes - ob, 0);
    rf := greatest(mf - q.files - ofl, 0);

    l.bytes := CASE WHEN q.counted AND mb > 0
                    THEN least(greatest(wb, 0),
                               greatest(rb / 2, least(greatest(nb, 0), rb)))
                    ELSE 0 END;
    l.files := CASE WHEN q.counted AND mf > 0
                    THEN least(greatest(wf, 0),
                               greatest(rf / 2, least(1, rf)))
                    ELSE 0 END;

    UPDATE siftp_quota SET bytes = q.bytes, files = q.files,
           counted = q.counted
     WHERE name = nm;
    UPDATE siftp_quota_leases x
       SET bytes = l.bytes, files = l.files, seq = l.seq, renewed = now(),
           master_pid = mpid
     WHERE x.name = nm AND x.node = nd AND x.worker_pid = wpid;

    IF q.bytes <> was.bytes OR q.files <> was.files
       OR q.counted <> was.counted
    THEN
        PERFORM pg_notify('siftp_quota', nm || ' ' || CASE WHEN q.counted
            THEN q.bytes || ' ' || q.files ELSE '-1 -1' END);
    END IF;

    RETURN QUERY SELECT q.bytes, q.files, l.bytes, l.files, q.counted;
END
$$;
