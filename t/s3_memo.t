#!/usr/bin/perl

# s3_memo.t -- s3_metadata_reuse: the open that follows a stat of a name,
# and the same session's second stat of it, take the worker's HEAD of it
# instead of asking S3 again.  Counted in the stand-in's request log
# (t/s3_standin.py in front of moto): an OpenSSH sftp "put" of a new file
# is 3 requests (a HEAD and a listing for the stat, the PutObject) where
# "s3_metadata_reuse 0" makes 5, a "get" 2 (its lstat's HEAD, the GET)
# where it makes 4.  What may not go stale does not, with the memo kept a
# minute: another session's stat asks S3 (an object replaced behind the
# server's back shows its new size at once); an upload through another
# session forgets the memo (the next read is of the new bytes); a read of
# an object replaced behind the server's back is refused, never served
# the old or mixed bytes.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_standin s3_put/;
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
$t->user_key('bob');
$t->user_key('carol');

$t->run();

my $sftp = port(8022);

# what reached S3 about the user's file since the last call: "HEAD LIST
# PUT"
my $seen = 0;
sub requests {
    my ($user, $name) = @_;
    my @log = split /\n/,
        `curl -s --max-time 30 http://127.0.0.1:$proxy/__log`;
    my @new = @log[$seen .. $#log];
    $seen = @log;
    return join ' ', map { /list-type/ ? 'LIST' : (split / /)[0] }
        grep { m{ /files/srv/$user/\Q$name\E(?:[ ?]|$)|prefix=srv%2F$user%2F\Q$name\E%2F} }
        @new;
}

$t->write_file('f16k', join('', map { chr(65 + $_ % 26) } 1 .. 16384));
requests('-', '-');

my %want = (
    bob => [ 'HEAD LIST PUT', 'HEAD GET' ],
    carol => [ 'HEAD LIST HEAD LIST PUT', 'HEAD HEAD HEAD GET' ],
);

for my $user (qw/bob carol/) {
    my ($rc, $out) = $t->sftp_batch($sftp, $user, "put $d/f16k f16k\n");
    is($rc, 0, "$user: sftp put") or diag($out);
    is(requests($user, 'f16k'), $want{$user}[0], "$user: put's requests");

    ($rc, $out) = $t->sftp_batch($sftp, $user, "get f16k $d/got-$user\n");
    is($rc, 0, "$user: sftp get") or diag($out);
    is(requests($user, 'f16k'), $want{$user}[1], "$user: get's requests");
    is($t->read_file("got-$user"), $t->read_file('f16k'),
        "$user: byte for byte");
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

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|crit|emerg)\]/,
    'no alert in the error log');

done_testing();
