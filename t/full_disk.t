#!/usr/bin/perl

# full_disk.t -- a full disk loses nothing: an upload that does not fit
# stops with 452 (FTP) or a failure status (SFTP), leaves no partial file
# and no temporary file, and the file it would have replaced keeps its old
# content; the space comes back and the next upload works.  Every upload
# path meets it: FTP STOR with splice(2) and with the pooled copy (splice
# off), FTPS STOR (TLS, pooled), APPE (in place: the old bytes stay, what
# fitted of the new ones is appended), SFTP WRITE from OpenSSH's sftp and
# from paramiko.  With "fsync on" an upload's data reaches the disk before
# it is renamed into place.  The storage is a 4 MiB tmpfs in a private
# mount namespace.

use warnings;
use strict;

use lib 't/lib';
use Test::More;

BEGIN {
    # run again inside a mount namespace of our own
    if (!$ENV{SIFTPD_TEST_MOUNTNS}) {
        if ($> == 0 && system('unshare -m true 2>/dev/null') == 0) {
            $ENV{SIFTPD_TEST_MOUNTNS} = 1;
            exec 'unshare', '-m', '--propagation', 'private', $^X,
                map({ "-I$_" } @INC), $0;
        }
        plan(skip_all => 'needs root and unshare -m');
    }
}

use Test::Siftpd qw/port/;
use Test::Ftps qw/tls_prelude/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
system("mount -t tmpfs -o size=4m tmpfs $d/data") == 0
    or plan(skip_all => 'cannot mount tmpfs');
mkdir "$d/data/alice";
$t->write_file('data/alice/keep', "old content\n");

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; fsync on; }
ftp {
    storage local;
    server { listen 127.0.0.1:%%PORT_8021%%; }
    server { listen 127.0.0.1:%%PORT_8023%%; splice off; }
    server {
        listen 127.0.0.1:%%PORT_8024%%;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF

$t->user_add('alice', 'pw', perms => 'list,download,upload,overwrite,delete');
$t->user_key('alice');

# ftp.py PORT plain|tls CMD:NAME=SIZE|DELE:NAME ...: STOR sends x's, APPE
# a's; prints "CMD:NAME=SIZE CODE" per upload
$t->write_file('ftp.py', tls_prelude() . <<'PY');
tls = sys.argv[2] == 'tls'
f = Reuse(context=ctx, timeout=15) if tls else ftplib.FTP(timeout=15)
f.connect('127.0.0.1', int(sys.argv[1]))
if tls:
    f.auth()
f.login('alice', 'pw')
if tls:
    f.prot_p()
# the server closes the data connection of an upload it stops, so the
# client's send may fail before it reads the reply
for a in sys.argv[3:]:
    cmd, arg = a.split(':')
    if cmd == 'DELE':
        print(a, f.sendcmd('DELE ' + arg)[:3])
        continue
    name, size = arg.split('=')
    try:
        c = f.transfercmd(cmd + ' ' + name)
        try:
            c.sendall((b'x' if cmd == 'STOR' else b'a') * int(size))
            if tls:
                c.unwrap()      # close_notify: the upload is whole
        except OSError:
            pass
        c.close()
        f.voidresp()
        print(a, 'ok')
    except ftplib.all_errors as e:
        print(a, str(e)[:3])
f.quit()
PY

$t->run();

# uploads over the FTP server on port(N), FTPS for 8024
sub ftp {
    my ($n, @args) = @_;
    my ($port, $mode) = (port($n), $n == 8024 ? 'tls' : 'plain');
    return `timeout 30 python3 $d/ftp.py $port $mode @args 2>&1`;
}

sub leftovers {
    opendir my $dh, "$d/data/alice" or return -1;
    my @t = grep { /\.sft-/ } readdir $dh;
    return scalar @t;
}

my $mib = 1024 * 1024;

my $out = ftp(8021, "STOR:big=" . 8 * $mib, "STOR:keep=" . 8 * $mib,
    "STOR:small=1000");
like($out, qr/^STOR:big=\d+ 452$/m, 'an upload that does not fit: 452');
ok(!-e "$d/data/alice/big", 'no partial file');
like($out, qr/^STOR:keep=\d+ 452$/m, 'nor over an existing file');
is($t->read_file('data/alice/keep'), "old content\n",
    'which keeps its old content');
is(leftovers(), 0, 'no temporary files left');
like($out, qr/^STOR:small=1000 ok$/m,
    'the space came back: the next upload works');
is(-s "$d/data/alice/small", 1000, 'and is whole');

# the pooled copy (splice off) and TLS (pooled, records decrypted first)

for my $p ([8023, 'splice off'], [8024, 'ftps']) {
    my ($n, $what) = @$p;
    $out = ftp($n, "STOR:big$n=" . 8 * $mib, "STOR:keep=" . 8 * $mib,
        "STOR:small$n=1000");
    like($out, qr/^STOR:big$n=\d+ 452$/m, "$what: 452") or diag($out);
    ok(!-e "$d/data/alice/big$n", "$what: no partial file");
    is($t->read_file('data/alice/keep'), "old content\n",
        "$what: the file it would replace keeps its old content");
    is(leftovers(), 0, "$what: no temporary files left");
    is(-s "$d/data/alice/small$n", 1000, "$what: the next upload works");
}

# APPE writes in place: the old bytes stay, what fitted of the new ones
# follows them; removing the file gives the space back

$out = ftp(8021, 'STOR:log=1000', 'APPE:log=' . 8 * $mib);
like($out, qr/^APPE:log=\d+ 452$/m, 'APPE: 452');
my $log = $t->read_file('data/alice/log');
like($log, qr/^x{1000}a*\z/, 'APPE: the old content stays, in front');
cmp_ok(length($log), '<', 1000 + 8 * $mib, 'APPE: the rest did not fit');
$out = ftp(8021, 'DELE:log', 'STOR:small2=1000');
like($out, qr/^STOR:small2=1000 ok$/m, 'APPE: the space comes back');
like($t->read_file('error.log'), qr/pwrite\(\) "log" failed .*No space/,
    'APPE: the log line names the file');

my $failed = 7;         # the FTP uploads above that met the full disk

SKIP: {
    skip 'no sftp', 4 unless -x '/usr/bin/sftp';

    $t->write_file('eight', 'y' x (8 * $mib));
    $t->write_file('batch', "put $d/eight big2\n");
    my $port = port(8022);
    my $o = `timeout 30 sftp -b $d/batch -P $port -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $d/key alice\@127.0.0.1 2>&1`;
    isnt($? >> 8, 0, 'sftp: an upload that does not fit fails');
    like($o, qr/No space left|Failure/i, 'sftp: with a failure status')
        or diag($o);
    ok(!-e "$d/data/alice/big2", 'sftp: no partial file') or diag($o);
    is(leftovers(), 0, 'sftp: no temporary files left');
    $failed++;
}

SKIP: {
    skip 'no paramiko', 4
        unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null')
            == 0;

    $t->write_file('put.py', <<'PY');
import sys, paramiko
tr = paramiko.Transport(('127.0.0.1', int(sys.argv[1])))
tr.connect(username='alice', pkey=paramiko.Ed25519Key(filename=sys.argv[2]))
sftp = paramiko.SFTPClient.from_transport(tr)
try:
    with sftp.open('big3', 'w') as f:
        for _ in range(8):
            f.write(b'z' * 1048576)
    print('put ok')
except IOError as e:
    print('put failed:', e)
try:
    with sftp.open('small3', 'w') as f:
        f.write(b'z' * 1000)
    print('small ok')
except IOError as e:
    print('small failed:', e)
tr.close()
PY
    my $port = port(8022);
    my $o = `timeout 30 /usr/bin/python3 $d/put.py $port $d/key 2>&1`;
    like($o, qr/^put failed: .*(No space left|Failure)/im,
        'paramiko: an upload that does not fit fails with its status')
        or diag($o);
    ok(!-e "$d/data/alice/big3", 'paramiko: no partial file');
    is(leftovers(), 0, 'paramiko: no temporary files left');
    like($o, qr/^small ok$/m, 'paramiko: the next upload works');
    $failed++;
}

my $n = () = $t->read_file('error.log') =~ /No space left/g;
is($n, $failed, "the full disk logged once per failed upload ($failed)");

# fsync on: the data is synced before the rename

SKIP: {
    skip 'no strace', 1 unless -x '/usr/bin/strace';

    my ($worker) = $t->workers();
    my $trace = "$d/strace.out";
    my $spid = fork();
    die unless defined $spid;
    if ($spid == 0) {
        exec 'strace', '-q', '-f', '-e', 'trace=fdatasync,renameat,renameat2',
            '-o', $trace, '-p', $worker;
        exit 127;
    }
    $t->wait_for(sub { -e $trace }, 5);
    select(undef, undef, undef, 0.5);
    ftp(8021, 'STOR:synced=5000');
    $t->wait_for(sub { $t->read_file('strace.out') =~ /renameat.*synced/ },
        5);
    kill 'INT', $spid;
    waitpid($spid, 0);
    like($t->read_file('strace.out'), qr/fdatasync\(.*\n.*renameat2?\(.*synced/,
        'fsync on: fdatasync before the rename into place');
}

$t->stop();
system("umount $d/data");

$t->done();
