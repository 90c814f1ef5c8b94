#!/usr/bin/perl

# full_disk.t -- a full disk loses nothing: an upload that does not fit
# stops with 452 (FTP) or a failure status (SFTP), leaves no partial file
# and no temporary file, and the file it would have replaced keeps its old
# content; the space comes back and the next upload works.  With "fsync on"
# an upload's data reaches the disk before it is renamed into place.  The
# storage is a 4 MiB tmpfs in a private mount namespace.

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
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
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

$t->write_file('ftp.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
f.login('alice', 'pw')
# the server closes the data connection of an upload it stops, so the
# client's send may fail before it reads the reply
for a in sys.argv[2:]:
    name, size = a.split('=')
    try:
        c = f.transfercmd('STOR ' + name)
        try:
            c.sendall(b'x' * int(size))
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

sub ftp {
    my $port = port(8021);
    return `timeout 30 python3 $d/ftp.py $port @_ 2>&1`;
}

sub leftovers {
    opendir my $dh, "$d/data/alice" or return -1;
    my @t = grep { /\.sft-/ } readdir $dh;
    return scalar @t;
}

my $mib = 1024 * 1024;

my $out = ftp("big=" . 8 * $mib, "keep=" . 8 * $mib, "small=1000");
like($out, qr/^big=\d+ 452$/m, 'an upload that does not fit: 452');
ok(!-e "$d/data/alice/big", 'no partial file');
like($out, qr/^keep=\d+ 452$/m, 'nor over an existing file');
is($t->read_file('data/alice/keep'), "old content\n",
    'which keeps its old content');
is(leftovers(), 0, 'no temporary files left');
like($out, qr/^small=1000 ok$/m, 'the space came back: the next upload works');
is(-s "$d/data/alice/small", 1000, 'and is whole');

SKIP: {
    skip 'no sftp', 4 unless -x '/usr/bin/sftp';

    $t->write_file('eight', 'y' x (8 * $mib));
    $t->write_file('batch', "put $d/eight big2\n");
    my $port = port(8022);
    my $o = `timeout 30 sftp -b $d/batch -P $port -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $d/key alice\@127.0.0.1 2>&1`;
    isnt($? >> 8, 0, 'sftp: an upload that does not fit fails');
    ok(!-e "$d/data/alice/big2", 'sftp: no partial file') or diag($o);
    is(leftovers(), 0, 'sftp: no temporary files left');
    my $n = () = $t->read_file('error.log') =~ /No space left/g;
    is($n, 3, 'the full disk logged once per failed upload (2 FTP, 1 SFTP)');
}

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
    ftp('synced=5000');
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
