-- 001_init.sql -- the users of siftpd's PostgreSQL user store.
--
-- Applied by siftpd itself (each worker, after connecting, applies the
-- migrations siftp_schema_version does not list yet, in one transaction
-- under an advisory lock), or by hand with psql.  A migration holds no
-- transaction control of its own.

CREATE TABLE siftp_users (
    name           text PRIMARY KEY
                   CHECK (name ~ '^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,63}$'),
    password       text NOT NULL DEFAULT '',   -- argon2id PHC string
    home           text NOT NULL DEFAULT '/',
    storage        text NOT NULL DEFAULT 'local',
    quota_bytes    bigint NOT NULL DEFAULT 0 CHECK (quota_bytes >= 0),
    quota_files    bigint NOT NULL DEFAULT 0 CHECK (quota_files >= 0),
    max_sessions   integer NOT NULL DEFAULT 0 CHECK (max_sessions >= 0),
    upload_rate    bigint NOT NULL DEFAULT 0 CHECK (upload_rate >= 0),
    download_rate  bigint NOT NULL DEFAULT 0 CHECK (download_rate >= 0),
    disabled       boolean NOT NULL DEFAULT false
);

-- "perms", "deny" and "hide", for the user's home ("/") or a directory
CREATE TABLE siftp_user_rules (
    name           text NOT NULL REFERENCES siftp_users
                   ON UPDATE CASCADE ON DELETE CASCADE,
    path           text NOT NULL DEFAULT '/',
    perms          text,
    deny           text,
    hide           text,
    PRIMARY KEY (name, path)
);

CREATE TABLE siftp_user_networks (
    name           text NOT NULL REFERENCES siftp_users
                   ON UPDATE CASCADE ON DELETE CASCADE,
    network        text NOT NULL,
    PRIMARY KEY (name, network)
);

CREATE TABLE siftp_user_keys (
    name           text NOT NULL REFERENCES siftp_users
                   ON UPDATE CASCADE ON DELETE CASCADE,
    ssh_key        text NOT NULL,
    PRIMARY KEY (name, ssh_key)
);

-- what siftpd reads: a user as the lines of a users file stanza
CREATE VIEW siftp_user_settings (name, key, path, value) AS
    SELECT u.name, s.key, NULL::text, s.value
      FROM siftp_users u,
           LATERAL (VALUES
               ('password', u.password),
               ('home', u.home),
               ('storage', u.storage),
               ('quota_bytes', u.quota_bytes::text),
               ('quota_files', u.quota_files::text),
               ('max_sessions', u.max_sessions::text),
               ('upload_rate', u.upload_rate::text),
               ('download_rate', u.download_rate::text),
               ('disabled', CASE WHEN u.disabled THEN 'yes' ELSE 'no' END)
           ) AS s (key, value)
     WHERE s.value <> '' OR s.key = 'password'
    UNION ALL
    SELECT r.name, s.key, NULLIF(r.path, '/'), s.value
      FROM siftp_user_rules r,
           LATERAL (VALUES ('perms', r.perms), ('deny', r.deny),
                           ('hide', r.hide)) AS s (key, value)
     WHERE s.value IS NOT NULL
    UNION ALL
    SELECT name, 'allow_from', NULL, network FROM siftp_user_networks
    UNION ALL
    SELECT name, 'ssh_key', NULL, ssh_key FROM siftp_user_keys;

-- every change, by siftpd or by hand, is told to every node
CREATE FUNCTION siftp_users_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('siftp_users', OLD.name);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('siftp_users', NEW.name);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER siftp_users_notify AFTER INSERT OR UPDATE OR DELETE
    ON siftp_users FOR EACH ROW EXECUTE FUNCTION siftp_users_notify();
CREATE TRIGGER siftp_user_rules_notify AFTER INSERT OR UPDATE OR DELETE
    ON siftp_user_rules FOR EACH ROW EXECUTE FUNCTION siftp_users_notify();
CREATE TRIGGER siftp_user_networks_notify AFTER INSERT OR UPDATE OR DELETE
    ON siftp_user_networks FOR EACH ROW EXECUTE FUNCTION siftp_users_notify();
CREATE TRIGGER siftp_user_keys_notify AFTER INSERT OR UPDATE OR DELETE
    ON siftp_user_keys FOR EACH ROW EXECUTE FUNCTION siftp_users_notify();
