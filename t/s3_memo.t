#!/usr/bin/perl

# s3_memo.t -- s3_metadata_reuse and s3_stat_peek: the open that follows
# a stat of a name, and the same session's second stat of it, take what
# the worker's peek (a ranged GET of the first 64 KiB, "PEEK") or HEAD of
# it answered instead of asking S3 again, and a file the peek brought
# whole is read from it.  Counted in the stand-in's request log
# (t/s3_standin.py in front of moto): an OpenSSH sftp "put" of a new file
# is 3 requests (a peek and a listing for the stat, the PutObject) where
# "s3_metadata_reuse 0" makes 5 (the open's probe is a HEAD); a "get" of
# 16 KiB is its lstat's peek alone, where "s3_metadata_reuse 0" makes 3
# peeks and "s3_stat_peek 0" a HEAD and a GET; a get of 100 KiB, or of a
# file whose peek's answer does not name its request, a peek and a GET
# (that GET of the whole object without Range, taken also where its
# answer comes chunked, without Content-Length); of an empty file, a
# peek and a HEAD; a read from the middle of a small file after a stat,
# the peek alone; the stat of a file S3 will not
# serve (archived) a peek and a HEAD.  What may not go stale does not,
# with the memo kept a minute: another session's stat asks S3 (an object
# replaced behind the server's back shows its new size at once); an
# upload through another session forgets the memo (the next read is of
# the new bytes); a read of an object replaced behind the server's back
# is refused, never served the old or mixed bytes (another session's peek
# brought them whole).  A session's look at a directory (the listing
# after a name found absent) answers its stats of the names the page
# covers and did not hold: more puts into a new directory are a PUT
# each; names this worker made since, or a rename brought, are asked
# about.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_standin s3_put s3_object/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('sftp', 's3_storage');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my $s3 = port(8900);
my $proxy = port(8902);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');
s3_standin($t, $proxy, $s3);

$t->write_file_expand('siftpd.conf', <<"EOF2");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $proxy) ]}
@{[ s3_storage('asks', $proxy, 's3_metadata_reuse 0') ]}
@{[ s3_storage('long', $proxy, 's3_metadata_reuse 60s') ]}
@{[ s3_storage('heads', $proxy, 's3_stat_peek 0') ]}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage cloud;
    }
}
EOF2

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('carol', 'pw', perms => 'all', storage => 'asks');
$t->user_add('dave', 'pw', perms => 'all', storage => 'long');
$t->user_add('erin', 'pw', perms => 'all', storage => 'heads');
$t->user_key($_) for qw/bob carol dave erin/;

$t->run();

my $sftp = port(8022);

# what reached S3 since the last call, of the lines that match: "PEEK
# LIST PUT"; a GET with a Range is a "RANGE", one of the whole object a
# "GET"
my $seen = 0;
sub asked {
    my ($re) = @_;
    my @log = split /\n/,
        `curl -s --max-time 30 http://127.0.0.1:$proxy/__log?ranges`;
    my @new = @log[$seen .. $#log];
    $seen = @log;
    return join ' ', map { /list-type/ ? 'LIST'
        : /response-content-disposition/ ? 'PEEK'
        : /^GET .*\tbytes=/ ? 'RANGE' : (split / /)[0] }
        grep { $_ =~ $re } @new;
}

# ... about the user's file
sub requests {
    my ($user, $name) = @_;
    return asked(qr{ /files/srv/$user/\Q$name\E(?:[ ?\t]|$)|prefix=srv%2F$user%2F\Q$name\E%2F|start-after=srv%2F$user%2F\Q$name\E(?:[&\t]|$)});
}

$t->write_file('f16k', join('', map { chr(65 + $_ % 26) } 1 .. 16384));
requests('-', '-');

$t->write_file('f100k', join('', map { chr(97 + $_ % 26) } 1 .. 102400));
$t->write_file('empty', '');

my %want = (
    bob => [ 'PEEK LIST PUT', 'PEEK' ],
    carol => [ 'PEEK LIST HEAD LIST PUT', 'PEEK PEEK PEEK' ],
    erin => [ 'HEAD LIST PUT', 'HEAD GET' ],
);

for my $user (qw/bob carol erin/) {
    my ($rc, $out) = $t->sftp_batch($sftp, $user, "put $d/f16k f16k\n");
    is($rc, 0, "$user: sftp put") or diag($out);
    is(requests($user, 'f16k'), $want{$user}[0], "$user: put's requests");

    ($rc, $out) = $t->sftp_batch($sftp, $user, "get f16k $d/got-$user\n");
    is($rc, 0, "$user: sftp get") or diag($out);
    is(requests($user, 'f16k'), $want{$user}[1], "$user: get's requests");
    is($t->read_file("got-$user"), $t->read_file('f16k'),
        "$user: byte for byte");
}

# larger than the peek, its answer not naming its request, empty

for ([ 'f100k', 'f100k', 'PEEK GET' ], [ 'f16k', 'noecho', 'PEEK GET' ],
    [ 'f100k', 'chunked', 'PEEK GET' ], [ 'empty', 'empty', 'PEEK HEAD' ])
{
    my ($file, $name, $want) = @$_;
    my ($rc, $out) = $t->sftp_batch($sftp, 'bob', "put $d/$file $name\n");
    is($rc, 0, "bob: put $name") or diag($out);
    requests('bob', $name);

    ($rc, $out) = $t->sftp_batch($sftp, 'bob', "get $name $d/got-$name\n");
    is($rc, 0, "bob: get $name") or diag($out);
    is(requests('bob', $name), $want, "bob: $name: get's requests");
    is($t->read_file("got-$name"), $t->read_file($file),
        "bob: $name: byte for byte");
}

# a read from the middle of a small file the session's stat peeked at
# (a resumed download): from the bytes the peek brought, no GET

$t->write_file('middle.py', <<'PY');
import sys, paramiko
tr = paramiko.Transport(('127.0.0.1', int(sys.argv[1])))
tr.connect(username='bob', password='pw')
s = paramiko.SFTPClient.from_transport(tr)
s.get_channel().settimeout(60)
print(s.stat('f16k').st_size)
with s.open('f16k', 'rb') as f:
    f.seek(5000)
    sys.stdout.write(f.read(100).decode() + '\n')
PY

requests('bob', 'f16k');
my $mid = `timeout 120 /usr/bin/python3 $d/middle.py $sftp 2>&1`;
is($mid, "16384\n" . substr($t->read_file('f16k'), 5000, 100) . "\n",
    'a read from the middle of a peeked file: its bytes');
is(requests('bob', 'f16k'), 'PEEK', 'a read from the middle: no GET');

# an object S3 keeps but will not serve (archived: 403 to a GET, not to
# a HEAD): its stat is the HEAD's answer, its download a refusal

{
    my ($rc, $out) = $t->sftp_batch($sftp, 'bob', "put $d/f16k archived\n");
    is($rc, 0, 'bob: put archived') or diag($out);
    requests('bob', 'archived');

    ($rc, $out) = $t->sftp_batch($sftp, 'bob', "ls -l archived\n");
    like($out, qr/\b16384\b.*archived/, 'archived: its stat, the size')
        or diag($out);
    is(requests('bob', 'archived'), 'PEEK HEAD',
        'archived: the peek refused, the HEAD answers');

    ($rc, $out) = $t->sftp_batch($sftp, 'bob', "get archived $d/got-a\n");
    isnt($rc, 0, 'archived: the get fails');
    like($out, qr/denied/i, 'archived: with a message') or diag($out);
}

# a minute's memo: what may not go stale, through paramiko sessions of
# dave; "one" written by one session, replaced by another, then behind
# the server's back

$t->write_file('memo.py', <<'PY');
import sys, paramiko

def session():
    tr = paramiko.Transport(('127.0.0.1', int(sys.argv[1])))
    tr.connect(username='dave', password='pw')
    s = paramiko.SFTPClient.from_transport(tr)
    s.get_channel().settimeout(60)
    return s

def read(s):
    try:
        with s.open('one', 'rb') as f:
            return f.read().decode()
    except Exception as e:
        return 'refused'

a = session()
if sys.argv[2] == 'write':
    b = session()
    with a.open('one', 'wb') as f:
        f.write(b'first')
    print('stat', a.stat('one').st_size)
    with b.open('one', 'wb') as f:
        f.write(b'second, longer')
    print('read', read(a))
    print('stat', a.stat('one').st_size)
else:
    print('read', read(a))
    print('stat', a.stat('one').st_size)
    print('read', read(a))
PY

my $out = `timeout 120 /usr/bin/python3 $d/memo.py $sftp write 2>&1`;
is($out, "stat 5\nread second, longer\nstat 14\n",
    'a file another session replaced is read new, and stats as new');

$t->write_file('third', 'third!!');
s3_put($s3, 'srv/dave/one', "$d/third");

$out = `timeout 120 /usr/bin/python3 $d/memo.py $sftp behind 2>&1`;
my ($first, $stat, $second) = $out =~ /^read (.*)\nstat (\d+)\nread (.*)\n\z/;
ok(defined $first && ($first eq 'refused' || $first eq 'third!!'),
    'replaced behind the server: the read before a stat is refused or new, '
    . 'never the old bytes') or diag($out);
is($stat, 7, 'another session\'s stat asks S3: the new size at once');
is($second, 'third!!', 'and the read after it is of the new object');

# a look at a directory: the listing that tells a new name is no
# directory also lists the names after it, and the session's next new
# names there are answered from it: three puts into a new directory are
# one peek, one listing and three PUTs (a peek and a listing each before)

asked(qr/^/);
my $rc;
($rc, $out) = $t->sftp_batch($sftp, 'dave',
    "mkdir up\nput $d/f16k up/a\nput $d/f16k up/b\nput $d/f16k up/c\n");
is($rc, 0, 'dave: three puts into a new directory') or diag($out);
is(asked(qr{/files/srv/dave/up/[^/?\s]|prefix=srv%2Fdave%2Fup%2F}),
    'PEEK LIST PUT PUT PUT', 'one look at the directory, then a PUT each');
is(s3_object($s3, 'srv/dave/up/c'), $t->read_file('f16k'),
    'the last of them stored');

# a page of the listing that ends before the directory does: 300 keys
# "many/n-000" .. "many/n-299" (sorting before "many/n/"), a look holds
# 256 of them; a name after the page's last is asked about, one inside
# it is not unless the page holds it

my $fill = '';
$t->write_file('one', 'x');
$fill .= sprintf("upload-file = \"%s/one\"\nurl = \"http://127.0.0.1:%d"
    . "/files/srv/dave/many/n-%03d\"\n", $d, $s3, $_) for 0 .. 299;
$t->write_file('fill.cfg', $fill);
is(system("curl -sf --max-time 120 --aws-sigv4 aws:amz:us-east-1:s3 "
    . "--user test:testsecret -o /dev/null -K $d/fill.cfg"), 0,
    '300 keys put into many/');

$t->write_file('look.py', <<'PY');
import sys, urllib.request, paramiko

def log():
    url = 'http://127.0.0.1:%s/__log' % sys.argv[2]
    return urllib.request.urlopen(url, timeout=30).read().decode().split('\n')

def session():
    tr = paramiko.Transport(('127.0.0.1', int(sys.argv[1])))
    tr.connect(username='dave', password='pw')
    s = paramiko.SFTPClient.from_transport(tr)
    s.get_channel().settimeout(60)
    return s

def size(s, name):
    try:
        return str(s.stat(name).st_size)
    except IOError:
        return 'none'

s = session()
for name in sys.argv[3:]:
    seen = len(log())
    got = size(s, name)
    asked = ['LIST' if 'list-type' in l
             else 'PEEK' if 'response-content-disposition' in l
             else l.split(' ')[0]
             for l in log()[seen:] if '/dave/many/' in l or 'dave%2Fmany' in l]
    print(name, got, ' '.join(asked) or '-')
PY

$out = `timeout 120 /usr/bin/python3 $d/look.py $sftp $proxy many/m many/n-1000 many/n-150 many/n-300 many/n-100 many/n 2>&1`;
is($out, <<'EOF', 'a look covers its page, and holds what the page held');
many/m none PEEK LIST
many/n-1000 none -
many/n-150 1 PEEK
many/n-300 none PEEK LIST
many/n-100 1 PEEK
many/n none PEEK LIST LIST
EOF

# what a look may not keep: names this worker made since (through another
# session), and what a rename brought; what was put behind the server's
# back is seen by any other session at once

$t->write_file('stale.py', <<'PY');
import sys, subprocess, paramiko

def session():
    tr = paramiko.Transport(('127.0.0.1', int(sys.argv[1])))
    tr.connect(username='dave', password='pw')
    s = paramiko.SFTPClient.from_transport(tr)
    s.get_channel().settimeout(60)
    return s

def size(s, name):
    try:
        return str(s.stat(name).st_size)
    except IOError:
        return 'none'

a, b, c = session(), session(), session()
print('x', size(a, 'up2/x'))
with b.open('up2/y', 'wb') as f:
    f.write(b'12345')
print('y', size(a, 'up2/y'))
subprocess.run(['curl', '-sf', '--max-time', '60', '--aws-sigv4',
                'aws:amz:us-east-1:s3', '--user', 'test:testsecret',
                '-o', '/dev/null', '-T', sys.argv[3], 'http://127.0.0.1:%s'
                '/files/srv/dave/up2/z' % sys.argv[2]], check=True)
print('z', size(a, 'up2/z'), size(c, 'up2/z'))
with a.open('up2/z', 'rb') as f:
    print('read', f.read().decode())
b.mkdir('up2/e')
with b.open('up2/e/q', 'wb') as f:
    f.write(b'q')
print('q', size(a, 'up2/d/q'))
b.rename('up2/e', 'up2/d')
print('q', size(a, 'up2/d/q'))
PY

$out = `timeout 120 /usr/bin/python3 $d/stale.py $sftp $s3 $d/third 2>&1`;
is($out, "x none\ny 5\nz none 7\nread third!!\nq none\nq 1\n",
    'a look: the worker\'s own changes seen, a rename forgets it, '
    . 'another session asks') or diag($out);

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|crit|emerg)\]/,
    'no alert in the error log');

done_testing();
