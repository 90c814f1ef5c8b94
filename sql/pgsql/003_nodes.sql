-- 003_nodes.sql -- the nodes on the database, and the sessions each holds
-- per user, so that a user's max_sessions counts the sessions of every
-- live node.
--
-- Each worker of a node writes the node's counts (its shared memory's)
-- when they change and every 2 seconds, which is also the node's
-- heartbeat; the others count a node whose heartbeat is recent
-- (database time), and re-read the counts when "siftp_sessions" names
-- another node.  A node's rows are replaced at each write, so its start
-- clears what a killed run left.

CREATE TABLE siftp_nodes (
    name           text PRIMARY KEY,           -- node_name
    master_pid     integer NOT NULL,
    address        text,                       -- as the database sees it
    started        timestamptz NOT NULL DEFAULT now(),
    heartbeat      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE siftp_node_sessions (
    node           text NOT NULL REFERENCES siftp_nodes
                   ON UPDATE CASCADE ON DELETE CASCADE,
    name           text NOT NULL,
    sessions       integer NOT NULL CHECK (sessions > 0),
    PRIMARY KEY (node, name)
);

CREATE FUNCTION siftp_node_sessions_set(nd text, master integer,
    names text[], counts integer[], changed boolean)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- the workers of a node one at a time
    PERFORM pg_advisory_xact_lock(hashtext('siftp_node ' || nd));

    INSERT INTO siftp_nodes AS n (name, master_pid, address)
    VALUES (nd, master, host(inet_client_addr()))
    ON CONFLICT (name) DO UPDATE
        SET heartbeat = now(),
            address = excluded.address,
            started = CASE WHEN n.master_pid = excluded.master_pid
                           THEN n.started ELSE now() END,
            master_pid = excluded.master_pid;

    DELETE FROM siftp_node_sessions s
     WHERE s.node = nd AND NOT (s.name = ANY (names));

    INSERT INTO siftp_node_sessions AS s (node, name, sessions)
    SELECT nd, u.name, u.n FROM unnest(names, counts) AS u (name, n)
     WHERE u.n > 0
    ON CONFLICT (node, name) DO UPDATE SET sessions = excluded.sessions;

    IF changed THEN
        PERFORM pg_notify('siftp_sessions', nd);
    END IF;
END
$$;
