#!/usr/bin/perl

# s3_hostile.t -- the S3 driver against an endpoint that cuts, garbles
# and lies in its answers: moto_server behind t/s3_hostile.py, which
# mangles a seeded share of the answers of every kind of request.  With
# one worker, a short s3_timeout and 5 MiB parts, an FTP client and an
# SFTP client (pipelined) drive a fixed, seeded sequence: small and
# multipart uploads, whole and offset downloads, listings, SIZE/MDTM and
# stat, rename, delete, mkdir/rmdir, append.  Every command must get an
# answer (a success, or FTP 4xx/5xx or an SFTP status with a message);
# what is answered as done must be so in moto (read past the endpoint):
# uploads byte-identical, failed ones leaving the old object or none and
# no multipart upload, downloads byte-identical, listings moto's names.
# Then calm: the same sequence all succeeds, and once the sessions end
# the buffer pool has every chunk back and none reserved.  siftpd keeps
# its master and worker throughout, with no signal and no sanitizer
# report.  Mangles pinned to one key check one answer each.  Seeds:
# TEST_S3_HOSTILE_SEEDS="1 2 3" (default two fixed ones).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use Cwd ();
use Test::Siftpd qw/port/;
use Test::Siftpd::S3 qw/s3_storage s3_proxied s3_ftp_sftp s3_stats
    s3_pool_whole/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage', 'http');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my @seeds = split ' ', ($ENV{TEST_S3_HOSTILE_SEEDS} // '7 11');
my ($moto, $proxy) = s3_proxied($t, 't/s3_hostile.py', $seeds[0]);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $proxy, 's3_part_size 5m', 's3_retries 2',
    's3_timeout 3s') ]}
@{[ s3_ftp_sftp('cloud') ]}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
my $key = $t->user_key('bob');

$t->run();

my $master = $t->read_file('siftpd.pid') =~ /(\d+)/ ? $1 : 0;
my @workers = $t->workers($master);
is(scalar @workers, 1, 'one worker');

my $lib = Cwd::getcwd() . '/t/lib';
my @run = ("$d/drive.py", port(8021), port(8022), $key,
    $proxy, $moto, $d, $lib);
write_driver($t);

for my $seed (@seeds) {
    endpoint("seed?seed=$seed");
    endpoint('rage');
    drive("seed $seed, raging", @run, $seed, 'rage');
    endpoint('calm');
    drive("seed $seed, calm", @run, $seed, 'calm');
}

my $count = decode_json(endpoint('count') || '{}');
my $mangled = 0;
$mangled += $_ for values %$count;
ok($mangled > 10, "answers mangled: $mangled "
    . join(' ', map { "$_=$count->{$_}" } sort keys %$count));

# pinned: one mangle forced on one key's requests

pinned($t);

# once the sessions end: every chunk back, none reserved

ok($t->wait_for(sub { pool_back() }, 30), 'the buffer pool is all free')
    or diag(explain(stats()->{buffer_pool}));
is(stats()->{buffer_pool}{reserved} // -1, 0, 'nothing reserved');

is(join(' ', $master, $t->workers($master)), join(' ', $master, @workers),
    'the master and its worker are the same processes');
my $log = $t->read_file('error.log');
unlike($log, qr/exited on signal|\[alert\]/, 'no worker died') or
    diag(join "\n", grep { /signal|alert/ } split /\n/, $log);

$t->done();


sub endpoint {
    my ($what) = @_;
    return `curl -s --max-time 10 'http://127.0.0.1:$proxy/__$what'`;
}

sub drive {
    my ($name, @args) = @_;
    my ($n, $out) = checks(300, @args);
    ok($n > 5 && $out =~ /^ok \S+: the sequence ended$/m,
        "$name: the driver ran its sequence to the end") or diag($out);
    if ($out !~ /^ok /m || $out =~ /^not ok |Traceback/m) {
        diag($out);
        diag(endpoint('log'));
    }
}

# the driver's checks as tests, within a limit of seconds: their number and
# the whole output
sub checks {
    my ($limit, @args) = @_;
    my $args = join(' ', map { "'$_'" } @args);
    my $out = `timeout $limit /usr/bin/python3 $args 2>&1`;
    my $n = 0;

    for my $l (split /\n/, $out) {
        if ($l =~ /^(not )?ok (.*)$/) {
            ok(!$1, $2);
            $n++;
        }
    }

    return ($n, $out);
}

sub stats {
    return s3_stats(port(8080));
}

sub pool_back {
    return s3_pool_whole(port(8080));
}

sub pinned {
    my ($t) = @_;
    my ($n, $out) = checks(120, @run, 0, 'pinned');
    ok($n > 0, 'the pinned checks ran') or diag($out);
    diag($out) if $out =~ /^not ok|Traceback/m;
}

sub write_driver {
    my ($t) = @_;
    $t->write_file('drive.py', <<'PY');
import ftplib, io, os, random, re, socket, subprocess, sys, time
import urllib.parse
ftp_port, sftp_port, key, proxy, moto, testdir, lib, seed, mode = sys.argv[1:]
sys.path.insert(0, lib)
import paramiko, sftp_raw

seed = int(seed)
rng = random.Random(seed)
TIMEOUT = 60
SIGNED = ['curl', '-s', '--max-time', '60', '--aws-sigv4',
          'aws:amz:us-east-1:s3', '--user', 'test:testsecret']
check = sftp_raw.check


def moto_get(name):
    """the object srv/bob/NAME in moto: bytes, or None"""
    out = subprocess.run(SIGNED + ['-w', '%{http_code}', '-o', '-',
                         'http://127.0.0.1:%s/files/srv/bob/%s'
                         % (moto, urllib.parse.quote(name))],
                         capture_output=True).stdout
    return out[:-3] if out.endswith(b'200') else None


def moto_names(d=''):
    prefix = 'srv/bob/' + d
    out = subprocess.run(SIGNED + [
        'http://127.0.0.1:%s/files?list-type=2&delimiter=%%2F&prefix=%s'
        % (moto, urllib.parse.quote(prefix, safe=''))],
        capture_output=True).stdout.decode()
    names = re.findall(r'<Key>([^<]*)</Key>', out)
    names += [p.rstrip('/') for p in
              re.findall(r'<Prefix>([^<]*)</Prefix>', out) if p != prefix]
    return sorted(set(n[len(prefix):] for n in names
                      if n.startswith(prefix) and n != prefix))


def moto_uploads(name):
    out = subprocess.run(SIGNED + ['http://127.0.0.1:%s/files?uploads'
                                   % moto], capture_output=True).stdout
    return len(re.findall(rb'<Key>srv/bob/' + re.escape(name.encode())
                          + rb'</Key>', out))


def calm(what, e):
    """no mangling: every command succeeds"""
    if mode == 'calm':
        check('%s: succeeds when calm' % what, False, e)


def data(n):
    return bytes(rng.getrandbits(8) for _ in range(n)) if n < 4096 \
        else rng.randbytes(n)


class Ftp:
    def __init__(self):
        self.f = ftplib.FTP()
        self.f.connect('127.0.0.1', int(ftp_port), timeout=TIMEOUT)
        self.f.login('bob', 'pw')
        self.f.voidcmd('TYPE I')

    def do(self, what, fn):
        """True: done; False: refused with a 4xx/5xx; None: no answer"""
        try:
            fn()
            return True
        except (ftplib.error_temp, ftplib.error_perm) as e:
            if not re.match(r'[45]\d\d ', str(e)):
                check('%s: a reply with a code' % what, False, e)
            calm(what, e)
            return False
        except (OSError, EOFError, ftplib.Error) as e:
            return self.cut(what, e)

    def cut(self, what, e):
        """a data connection closed under a transfer: the reply follows"""
        try:
            self.f.getresp()
            return True
        except (ftplib.error_temp, ftplib.error_perm) as e2:
            calm(what, e2)
            return False
        except (OSError, EOFError, ftplib.Error) as e2:
            check('%s: answered' % what, False, repr(e) + ' ' + repr(e2))
            self.__init__()
            return None


def ftp_upload(c, name, body, cmd='STOR'):
    old = moto_get(name)
    ok = c.do('FTP %s %s' % (cmd, name), lambda: c.f.storbinary(
        '%s %s' % (cmd, name), io.BytesIO(body)))
    now = moto_get(name)
    want = body if cmd == 'STOR' else (old or b'') + body
    if ok:
        check('FTP %s %s: done, in moto' % (cmd, name), now == want,
              'moto has %s bytes, want %d'
              % (None if now is None else len(now), len(want)))
    elif ok is False:
        check('FTP %s %s: failed, the old object or none' % (cmd, name),
              now is None or now == old or cmd == 'APPE'
              and now == want, 'moto has %s bytes'
              % (None if now is None else len(now)))
        uploads_gone(name)
    return ok


def uploads_gone(name):
    """none left, unless the endpoint failed its abort too (the sweep's)"""
    for _ in range(100):
        if moto_uploads(name) == 0:
            break
        time.sleep(0.1)
    log = subprocess.run(['curl', '-s', 'http://127.0.0.1:%s/__log' % proxy],
                         capture_output=True).stdout.decode()
    aborted = re.search(r'^\S+ DELETE /files/srv/bob/%s\?uploadId='
                        % re.escape(name), log, re.M)
    check('%s: no multipart upload left' % name, moto_uploads(name) == 0
          or aborted is not None)


def ftp_download(c, name, rest=None, why=''):
    b = io.BytesIO()
    ok = c.do('FTP RETR %s from %s%s' % (name, rest, why),
              lambda: c.f.retrbinary('RETR ' + name, b.write, rest=rest))
    if ok:
        want = moto_get(name) or b''
        check('FTP RETR %s from %s%s: done, byte-identical'
              % (name, rest, why),
              b.getvalue() == want[rest or 0:], 'got %d bytes, want %d'
              % (len(b.getvalue()), len(want[rest or 0:])))
    return ok


def ftp_list(c, d=''):
    names = []
    ok = c.do('FTP NLST %s' % d, lambda: c.f.retrlines(
        'NLST' + (' ' + d if d else ''), names.append))
    if ok:
        got = sorted(n.rsplit('/', 1)[-1] for n in names)
        check('FTP NLST %s: moto\'s names' % d, got == moto_names(d),
              '%s != %s' % (got, moto_names(d)))
    return ok


def ftp_sequence(c, tag):
    small, big = data(rng.randint(1, 300000)), data(11 * 1024 * 1024 + 5)
    a, m = '%s-small' % tag, '%s-multi' % tag
    ftp_upload(c, a, small)
    ftp_upload(c, m, big)
    ftp_download(c, a)
    ftp_download(c, m, rest=rng.randint(1, len(big) - 1))
    ftp_list(c)
    c.do('FTP TYPE I', lambda: c.f.voidcmd('TYPE I'))
    for cmd in ('SIZE ' + a, 'MDTM ' + m, 'MKD %s-dir' % tag,
                'RMD %s-dir' % tag):
        c.do('FTP ' + cmd, lambda: c.f.sendcmd(cmd))
    ftp_upload(c, a, data(1000), 'APPE')
    ftp_download(c, a)
    if c.do('FTP RNFR %s' % a, lambda: c.f.sendcmd('RNFR ' + a)):
        c.do('FTP RNTO %s' % a, lambda: c.f.sendcmd('RNTO %s-moved' % tag))
    ftp_list(c)
    c.do('FTP DELE %s' % m, lambda: c.f.delete(m))


class Sftp:
    def __init__(self):
        self.t = sftp_raw.login(int(sftp_port), key, 'bob')
        self.s = paramiko.SFTPClient.from_transport(self.t)
        self.s.get_channel().settimeout(TIMEOUT)

    def do(self, what, fn):
        try:
            return True, fn()
        except IOError as e:
            if isinstance(e, socket.timeout) or not str(e):
                check('SFTP %s: a status with a message' % what, False,
                      repr(e))
                self.__init__()
                return None, None
            calm(what, e)
            return False, None
        except (paramiko.SSHException, EOFError) as e:
            check('SFTP %s: answered' % what, False, repr(e))
            self.__init__()
            return None, None


def close_checked(s, f):
    """paramiko's close hides a failed CLOSE and failed pipelined writes"""
    f.flush()
    s._finish_responses(f)
    failed = getattr(f, '_saved_exception', None)
    f._closed = True
    s._request(paramiko.sftp.CMD_CLOSE, f.handle)
    if failed:
        raise failed


def sftp_upload(c, name, body):
    old = moto_get(name)

    def put():
        f = c.s.open(name, 'wb')
        f.set_pipelined(True)
        for i in range(0, len(body), 32768):
            f.write(body[i:i + 32768])
        close_checked(c.s, f)

    ok, _ = c.do('put ' + name, put)
    now = moto_get(name)
    if ok:
        check('SFTP put %s: done, in moto' % name, now == body,
              'moto has %s bytes' % (None if now is None else len(now)))
    elif ok is False:
        check('SFTP put %s: failed, the old object or none' % name,
              now is None or now == old)
        uploads_gone(name)


def sftp_read(c, name, offset, n):
    def get():
        with c.s.open(name, 'rb') as f:
            f.seek(offset)
            if n is None:
                f.prefetch()
            return f.read(n)

    ok, got = c.do('read %s at %d' % (name, offset), get)
    if ok:
        want = (moto_get(name) or b'')[offset:]
        want = want if n is None else want[:n]
        check('SFTP read %s at %d: byte-identical' % (name, offset),
              got == want, 'got %d bytes, want %d' % (len(got), len(want)))


def sftp_sequence(c, tag):
    small, big = data(rng.randint(1, 200000)), data(11 * 1024 * 1024 + 3)
    a, m = '%s-small' % tag, '%s-multi' % tag
    sftp_upload(c, a, small)
    sftp_upload(c, m, big)
    sftp_read(c, a, 0, None)
    sftp_read(c, m, rng.randint(0, len(big) - 70000), 65536)
    sftp_read(c, m, 0, None)
    ok, names = c.do('listdir', lambda: c.s.listdir('.'))
    if ok:
        check('SFTP listdir: moto\'s names', sorted(names) == moto_names(),
              '%s != %s' % (sorted(names), moto_names()))
    c.do('stat ' + m, lambda: c.s.stat(m))
    c.do('mkdir', lambda: c.s.mkdir(tag + '-d'))
    c.do('rmdir', lambda: c.s.rmdir(tag + '-d'))
    c.do('rename', lambda: c.s.rename(a, tag + '-renamed'))
    c.do('remove', lambda: c.s.remove(m))


def force(kind, name, count):
    subprocess.run(['curl', '-s', 'http://127.0.0.1:%s/__force?kind=%s'
                    '&key=%s&count=%d' % (proxy, kind, name, count)],
                   capture_output=True)


def pinned():
    """one mangle forced on one key's requests: a failure or the truth"""
    c = Ftp()
    body = data(300000)
    ftp_upload(c, 'pin-src', body)
    # answers without an ETag: a HEAD (404) and the PutObject (the
    # sanitizers saw a memcpy from NULL), a HEAD and ranged GETs below
    force('etag_missing', 'pin-etag', 3)
    ftp_upload(c, 'pin-etag', data(2000))
    force('etag_missing', 'pin-etag', 0)
    # a HEAD without its Content-Length (chunked) says no size: the
    # open's peek (its query has "?") answered without a Content-Range,
    # so that a HEAD asks
    ftp_upload(c, 'pin-head', data(3000))
    force('range_none', 'pin-head?', 1)
    force('chunked_bad', 'pin-head', 3)
    ftp_download(c, 'pin-head', None, ', chunked HEAD')
    force('chunked_bad', 'pin-head', 0)
    force('range_none', 'pin-head?', 0)
    # a malformed status line or length once (as a connection that bytes
    # past an answer's end poisoned gives): the next attempt answers
    for kind in ('bad_status', 'length_nan'):
        ftp_upload(c, 'pin-weird', data(3000))
        force(kind, 'pin-weird', 1)
        ok = ftp_download(c, 'pin-weird', None, ', %s once' % kind)
        check('FTP RETR pin-weird, %s once: tried again, done' % kind,
              ok is True)
        force(kind, 'pin-weird', 0)
    # a small file's peek whose bytes are not what S3's CRC-32C of the
    # object says (a byte changed on the way): not served; the GET after
    # it asks for the ETag
    ftp_upload(c, 'pin-flip', data(3000))
    force('body_flip', 'pin-flip?', 1)
    ftp_download(c, 'pin-flip', None, ', a changed byte in its peek')
    force('body_flip', 'pin-flip?', 0)
    # a peek answered with another small object's whole answer (which
    # does not name this request): never served as this file's bytes
    ftp_upload(c, 'pin-tiny', data(2000))
    ftp_upload(c, 'pin-peek', data(3000))
    ftp_download(c, 'pin-tiny')
    force('range_object', 'pin-peek?', 1)
    ftp_download(c, 'pin-peek', None, ', another object\'s peek')
    force('range_object', 'pin-peek?', 0)
    # the GET of a whole object (no Range) answered with another object's
    # whole answer, of the same size: refused, its ETag not the open's
    ftp_upload(c, 'pin-same', data(300000))
    ftp_download(c, 'pin-same')
    force('whole_object', 'pin-src', 1)
    ftp_download(c, 'pin-src', None, ', another object\'s whole answer')
    force('whole_object', 'pin-src', 0)
    # an answer cut after its status line or some headers is no answer
    for kind in ('status_close', 'headers_cut'):
        force(kind, 'pin-put', 3)
        ftp_upload(c, 'pin-put', data(4000))
        force(kind, 'pin-put', 0)
    # a small append GETs the old bytes: those of another range refused
    for kind in ('range_other', 'range_object'):
        ftp_upload(c, 'pin-app', data(5000))
        ftp_download(c, 'pin-src')
        force(kind, 'pin-app', 3)
        ftp_upload(c, 'pin-app', data(777), 'APPE')
        force(kind, 'pin-app', 0)
    for kind in ('range_other', 'range_total', 'range_bad',
                 'range_none', 'range_object', 'body_long', 'etag_missing',
                 'many_headers', 'body_short', 'chunked_bad', 'bad_status'):
        force(kind, 'pin-src', 3)
        ftp_download(c, 'pin-src', 1234, ', ' + kind)
        force(kind, 'pin-src', 0)


if mode == 'pinned':
    pinned()
    sys.exit(0)
tag = '%s-%d' % (mode, seed)
ftp_sequence(Ftp(), 'f' + tag)
sftp_sequence(Sftp(), 's' + tag)
check('%s: the sequence ended' % tag, True)
PY
}
