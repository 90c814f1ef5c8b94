#!/usr/bin/perl

# http_api_sessions.t -- /api/v1/sessions with 2 workers: FTP, FTPS and
# SFTP sessions listed with their user, protocol, address, port and bytes;
# a rate-limited download shows its file, data path and rate while it
# runs; ending one session by id closes that client only (FTP sees 421,
# SFTP its connection closed), ending all of a user's, read tokens refused
# (403), unknown ids (404), the log line naming the token and the audit
# log.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Ftps qw/tls_prelude/;

my $t = Test::Siftpd->new()->has('http')->has('ftp')->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no sftp or ssh-keygen')
    unless -x '/usr/bin/sftp' && -x '/usr/bin/ssh-keygen';

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';

$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n");

mkdir "$d/data";
mkdir "$d/data/$_" for qw/alice bob carol/;

# carol's download takes seconds at 64k/s
$t->write_file('data/carol/big', 'x' x (2 * 1024 * 1024));

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    ssl_certificate      %%TESTDIR%%/tls/cert.pem;
    ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
    ssl_self_signed      on;
    tls_login            optional;
    tls_data             optional;
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
        api_audit_log audit.log;
    }
    server {
        listen 127.0.0.1:%%PORT_8081%%;
        api_token_file tokens;
        api_end_sessions off;
    }
}
EOF

# 20 passive ports from the one reserved
my $lo = port(8100);
my $conf = $t->read_file('siftpd.conf');
$conf =~ s/passive_ports $lo-$lo/"passive_ports $lo-" . ($lo + 20)/e;
$t->write_file('siftpd.conf', $conf);

$t->user_add('alice', 'alice-pw');
$t->user_add('bob', 'bob-pw');
$t->user_add('carol', 'carol-pw');
my $key = $t->user_key('bob');
$t->write_file('users', $t->read_file('users') . "download_rate = 64k\n");

$t->run();

$t->write_file('sessions.py', tls_prelude() . <<'PY');
import json, subprocess, threading, time, urllib.request, urllib.error

ftp_port, sftp_port, http_port = (int(a) for a in sys.argv[1:4])
admin, reader, key = sys.argv[4], sys.argv[5], sys.argv[6]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def api(method, path, token=admin, route='sessions', body=None,
        port=http_port):
    req = urllib.request.Request(
        'http://127.0.0.1:%d/api/v1/%s%s' % (port, route, path),
        data=body and json.dumps(body).encode(),
        method=method, headers={'Authorization': 'Bearer ' + token})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read() or b'null')
    except urllib.error.HTTPError as e:
        return e.code, None

def sessions(**match):
    st, body = api('GET', '')
    return [s for s in body or []
            if all(s.get(k) == v for k, v in match.items())]

def wait(cond, secs=10):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False

def closed(f):
    # the 421 (FTP), then the end of the connection
    try:
        f.sock.settimeout(10)
        line = f.getline()
        return line.startswith('421') and f.getline() == ''
    except (EOFError, OSError, ftplib.Error):
        return True

plain = ftplib.FTP(timeout=20)
plain.connect('127.0.0.1', ftp_port)
plain.login('alice', 'alice-pw')

tls = ftplib.FTP_TLS(context=ctx, timeout=20)
tls.connect('127.0.0.1', ftp_port)
tls.auth()
tls.login('alice', 'alice-pw')

sftp = subprocess.Popen(['sftp', '-b', '-', '-i', key,
    '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes',
    '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
    '-P', str(sftp_port), 'bob@127.0.0.1'],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sftp.stdin.write(b'pwd\n')
sftp.stdin.flush()
sftp.stdout.readline()

check('sftp session logged in', wait(lambda: sessions(user='bob')))

st, body = api('GET', '', reader)
check('a read token lists', st == 200 and isinstance(body, list), st)

mine = plain.sock.getsockname()[1]
p = sessions(port=mine)
check('ftp session listed by its client port',
      len(p) == 1 and p[0]['protocol'] == 'ftp' and p[0]['user'] == 'alice'
      and p[0]['address'] == '127.0.0.1' and p[0]['transfer'] is None
      and abs(p[0]['since'] - time.time()) < 600, p)
s = sessions(port=tls.sock.getsockname()[1])
check('ftps session listed', len(s) == 1 and s[0]['protocol'] == 'ftps'
      and s[0]['user'] == 'alice', s)
b = sessions(user='bob')
check('sftp session listed', len(b) == 1 and b[0]['protocol'] == 'sftp'
      and b[0]['bytes_in'] > 0 and b[0]['bytes_out'] > 0, b)

st, body = api('GET', '?user=alice')
check('?user= filters', st == 200 and len(body) == 2
      and all(x['user'] == 'alice' for x in body), body)
st, body = api('GET', '?user=a/b')
check('?user= with a bad name: 400', st == 400, st)

# a rate-limited download: its file, path and rate while it runs

slow = ftplib.FTP(timeout=30)
slow.connect('127.0.0.1', ftp_port)
slow.login('carol', 'carol-pw')
got = []
def download():
    try:
        slow.retrbinary('RETR big', got.append)
        got.append(b'complete')
    except (EOFError, OSError, ftplib.Error) as e:
        got.append(e)
th = threading.Thread(target=download)
th.start()

def carol():
    c = sessions(user='carol')
    return c[0] if c and c[0]['transfer'] else None
check('the transfer shows', wait(carol))
c1 = carol() or {}
x = c1.get('transfer') or {}
check('transfer fields', x.get('direction') == 'download'
      and x.get('path') == '/big'
      and x.get('data_path') in ('sendfile', 'pooled', 'io_uring'), x)
wait(lambda: (carol() or {}).get('bytes_out', 0) > c1.get('bytes_out', 0))
c2 = carol() or {}
check('bytes grow during the transfer',
      c2.get('bytes_out', 0) > c1.get('bytes_out', 0), (c1, c2))
check('the rate is about the limit',
      0 < (c2.get('transfer') or {}).get('rate', 0) < 1024 * 1024, c2)

# ending sessions

st, _ = api('DELETE', '/' + p[0]['id'], reader)
check('a read token cannot end a session: 403', st == 403, st)
st, _ = api('DELETE', '/999999-1')
check('unknown id: 404', st == 404, st)
st, _ = api('DELETE', '/abc')
check('malformed id: 404', st == 404, st)
st, _ = api('DELETE', '')
check('no id and no user: 400', st == 400, st)

st, body = api('DELETE', '/' + p[0]['id'])
check('end by id: 200', st == 200 and body == {'ended': 1}, (st, body))
check('the ftp client sees 421 and the close', closed(plain))
check('the ended session is gone',
      wait(lambda: not sessions(port=mine)))
try:
    check('the ftps session stays', tls.voidcmd('NOOP').startswith('200'))
except ftplib.all_errors as e:
    check('the ftps session stays', False, e)
st, _ = api('DELETE', '/' + p[0]['id'])
check('an ended id: 404', st == 404, st)

st, body = api('DELETE', '/' + c2.get('id', 'x'))
th.join(20)
check('a transfer ended midway', st == 200 and got
      and got[-1] != b'complete', (st, got[-1:]))

st, body = api('DELETE', '?user=bob')
check('end a user\'s sessions', st == 200 and body == {'ended': 1},
      (st, body))
try:
    # its next command finds the connection closed
    rest = sftp.communicate(b'ls\n', timeout=10)[0]
    check('the sftp client is told and disconnected',
          b'Session ended by the administrator' in rest
          and sftp.returncode != 0, rest)
except subprocess.TimeoutExpired:
    sftp.kill()
    check('the sftp client sees the close', False)

st, body = api('DELETE', '?user=alice')
check('end alice\'s', st == 200 and body == {'ended': 1}, (st, body))
check('the ftps client sees the close', closed(tls))
check('no sessions left', wait(lambda: sessions() == []), sessions())

# a user disabled or deleted through the API loses its sessions

def login(user, pw):
    f = ftplib.FTP(timeout=20)
    f.connect('127.0.0.1', ftp_port)
    f.login(user, pw)
    return f

a = login('alice', 'alice-pw')
st, _ = api('PATCH', '/alice', route='users', body={'disabled': True})
check('disable alice', st == 200, st)
check('a disabled user\'s session ends', closed(a))

c = login('carol', 'carol-pw')
st, _ = api('DELETE', '/carol', route='users')
check('delete carol', st == 204, st)
check('a deleted user\'s session ends', closed(c))

# "api_end_sessions off" on the other server: disabled, the session stays

b = login('bob', 'bob-pw')
st, _ = api('PATCH', '/bob', route='users', body={'disabled': True},
            port=int(sys.argv[7]))
check('disable bob where sessions are not ended', st == 200, st)
try:
    check('his session stays', b.voidcmd('NOOP').startswith('200')
          and len(sessions(user='bob')) == 1)
    b.quit()
except ftplib.all_errors as e:
    check('his session stays', False, e)
PY

my ($n, $out) = $t->python_checks('sessions.py', port(8021), port(8022),
    port(8080), $admin, $reader, $key, port(8081));
is($n, 32, 'every check ran') or diag($out);

like($t->read_file('error.log'),
    qr/ftp session ended by the admin API, token "ops"/,
    'the owner logs who ended the session');
like($t->read_file('error.log'),
    qr/sftp session ended by the admin API, token "ops"/,
    'sftp too');
like($t->read_file('error.log'),
    qr/admin API: 1 session\(s\) of "alice" asked to end, token "ops"/,
    'disabling a user ends its sessions');
unlike($t->read_file('error.log'), qr/session\(s\) of "bob"/,
    'not with api_end_sessions off');

my $audit = $t->read_file('audit.log');
like($audit, qr/ token=ops method=DELETE route=\/api\/v1\/sessions\/\d+-\d+ user=- status=200$/m,
    'audit: end by id');
like($audit, qr/ token=ops method=DELETE route=\/api\/v1\/sessions user=bob status=200$/m,
    'audit: end by user');
like($audit, qr/ method=DELETE route=\/api\/v1\/sessions\/999999-1 user=- status=404 reason="no such session"$/m,
    'audit: unknown id');
unlike($audit, qr/method=GET/, 'audit: reads are not logged');

$t->stop();

done_testing();
