#!/usr/bin/perl

# quota.t -- quotas and max_sessions are the user's, across sessions,
# workers and protocols: the home is counted before the first change,
# uploads over the byte or file quota stop with 552 and leave nothing
# behind, deletes give the room back, a restart counts the home again
# exactly; max_sessions counts FTP and SFTP sessions in all workers, and
# the sessions of a worker that died are given back.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
mkdir "$d/data/bob";
mkdir "$d/data/bob/sub";
$t->write_file('data/bob/old1', 'o' x 3000);
$t->write_file('data/bob/sub/old2', 'p' x 1000);

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF

$t->user_add('bob', 'pw',
    perms => 'list,download,upload,overwrite,delete,rename,mkdir,rmdir');
$t->user_key('bob');
$t->write_file('users', $t->read_file('users')
    . "quota_bytes = 10000\nquota_files = 5\nmax_sessions = 2\n");

# one FTP session: login, then each action; prints one line per action
$t->write_file('ftp.py', <<'PY');
import ftplib, io, sys
port = int(sys.argv[1])
f = ftplib.FTP()
f.connect('127.0.0.1', port, timeout=15)
try:
    f.login('bob', 'pw')
    print('login ok')
except ftplib.error_perm as e:
    print('login', str(e)[:3])
    sys.exit(0)
for a in sys.argv[2:]:
    op, _, arg = a.partition(':')
    try:
        if op == 'stor':
            name, size = arg.split('=')
            f.storbinary('STOR ' + name, io.BytesIO(b'x' * int(size)))
        elif op == 'dele':
            f.delete(arg)
        elif op == 'hold':
            sys.stdout.flush()
            sys.stdin.read()
        print(a, 'ok')
    except ftplib.all_errors as e:
        print(a, str(e)[:3])
sys.stdout.flush()
try:
    f.quit()
except ftplib.all_errors:
    pass
PY

sub ftp {
    my $port = port(8021);
    my $out = `timeout 30 python3 $d/ftp.py $port @_ 2>&1`;
    return $out;
}

# a session kept open until the handle is closed
sub hold {
    my $port = port(8021);
    my $pid = open(my $h, '|-', "timeout 60 python3 $d/ftp.py $port hold"
        . " >>$d/held.out 2>&1") or die;
    return [$h, $pid];
}

sub held {
    my $n = () = $t->read_file('held.out') =~ /^login ok/mg;
    return $n;
}

sub release {
    my ($s) = @_;
    close $s->[0];
}

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

# counted before the first change: 4000 bytes in 2 files

my $out = ftp('stor:a=5000', 'stor:b=2000', 'stor:c=1000', 'stor:d=1');
like($out, qr/^stor:a=5000 ok$/m, 'upload within the quota');
like($out, qr/^stor:b=2000 552$/m, 'upload over the byte quota: 552');
like($out, qr/^stor:c=1000 ok$/m, 'an upload filling it exactly');
like($out, qr/^stor:d=1 552$/m, 'one byte more: 552');
ok(!-e "$d/data/bob/b" && !-e "$d/data/bob/d", 'nothing left of them');
my @tmp = glob("$d/data/bob/.*.sft-*");
is(scalar @tmp, 0, 'no temporary files left');
ok($t->wait_log(qr/usage of "bob" counted: 4000 bytes in 2 files/, 5),
    'the home was counted once, before the first change');

$out = ftp('dele:a', 'stor:e=5000', 'stor:f=1');
like($out, qr/^dele:a ok\nstor:e=5000 ok\nstor:f=1 552$/m,
    'a delete gives its room back, exactly');

# a restart counts again: 10000 bytes in 4 files

$t->stop();
$t->run();
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

$out = ftp('stor:g=1', 'dele:e', 'stor:h=4999', 'stor:i=2', 'stor:j=1',
    'dele:h', 'stor:k=1', 'stor:m=1');
like($out, qr/^stor:g=1 552$/m, 'after a restart the quota is still full');
like($out, qr/^dele:e ok\nstor:h=4999 ok$/m, 'and frees exactly');
like($out, qr/^stor:i=2 552\nstor:j=1 ok$/m, 'the byte quota holds exactly');
like($out, qr/^dele:h ok\nstor:k=1 ok\nstor:m=1 552$/m,
    'the file quota (5) holds with bytes to spare');
ok(!-e "$d/data/bob/m", 'no file over the file quota');

# SFTP charges the same usage

SKIP: {
    skip 'no sftp', 2 unless -x '/usr/bin/sftp';

    $t->write_file('one', 'z');
    $t->write_file('batch', "rm k\nput $d/one k2\nput $d/one l\n");
    my $port = port(8022);
    my $sftp = `timeout 20 sftp -b $d/batch -P $port -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $d/key bob\@127.0.0.1 2>&1`;
    ok(-f "$d/data/bob/k2", 'sftp: an upload within the quota')
        or diag($sftp);
    ok(!-e "$d/data/bob/l", 'sftp: one over the file quota refused');
}

# max_sessions = 2, whichever worker and protocol; the sessions above
# are gone from the count first (the server may close one just after
# its client has exited)

ok($t->wait_for(sub {
    my $log = $t->read_file('error.log');
    my $started = () = $log =~ /ftp session started/g;
    my $closed = () = $log =~ /ftp session closed/g;
    return $started == $closed;
}, 15), 'every earlier session closed');

my @held = (hold(), hold());
ok($t->wait_for(sub { held() == 2 }, 15), 'two sessions held')
    or diag($t->read_file('held.out'), $t->read_file('error.log'));
like(ftp(), qr/^login 530$/m, 'a third FTP session is refused');

SKIP: {
    skip 'no sftp', 1 unless -x '/usr/bin/sftp';

    $t->write_file('batch', "pwd\n");
    my $port = port(8022);
    system("timeout 20 sftp -b $d/batch -P $port -o BatchMode=yes"
        . " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
        . " -i $d/key bob\@127.0.0.1 >/dev/null 2>&1");
    isnt($? >> 8, 0, 'so is an SFTP session');
}

release($held[0]);
ok($t->wait_for(sub { ftp() =~ /^login ok/m }, 10),
    'a closed session makes room');

# the sessions of workers killed are given back

@held = (hold(), hold());
$t->wait_for(sub { held() == 4 }, 15);
like(ftp(), qr/^login 530$/m, 'full again');
kill 'KILL', $t->workers();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 10), 'workers respawned');
ok($t->wait_for(sub { ftp() =~ /^login ok/m }, 10),
    'the dead workers\' sessions were given back');
release($_) for @held;

# the alerts of the killed workers are expected
my $log = $t->read_file('error.log');
$log =~ s/^.*\[alert\].*exited on signal 9.*\n//mg;
$t->write_file('error.log', $log);

$t->done();
