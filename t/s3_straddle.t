#!/usr/bin/perl

# s3_straddle.t -- S3 uploads whose writes run from the end of one part
# into the next, many at once on a pool that lends parts one part's
# chunks: 6 MiB of 256 KiB chunks (24), parts of 5 MiB (20 chunks, the
# cap 21), so 4 chunks carry the bytes of transfers, one worker.  OpenSSH
# sftp puts (255 KiB WRITEs, 64 in flight: 5 MiB is no multiple of them)
# and FTP APPEs to small objects (their 256 KiB chunks start 1000 bytes
# into a part) of three parts each, all at once: the WRITE that
# completes a part waits for the next one with its chunk, more of them
# than the pool has chunks outside the cap.  Every upload completes
# within a bound, every object is byte-identical, no multipart upload is
# left, the pool is back at 0 chunks in use and 0 reserved, and no
# worker died.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use POSIX qw/:sys_wait_h/;
use Digest::MD5 qw/md5_hex/;
use Test::Siftpd::S3 qw/s3_storage_moto s3_object s3_uploads s3_pool_conf/;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

# more uploads than the 4 chunks outside the cap, on either build; the
# time limit is for a machine busy with other tests, not a speed bound
my $san = `@{[ $t->binary() ]} -V 2>&1` =~ /--with-sanitizers/;
my ($nsftp, $nftp) = $san ? (6, 2) : (8, 3);
my $limit = $san ? 400 : 200;

s3_pool_conf($t, $s3, '6m');

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_key('bob');

# 11 MiB and a bit each (three parts, the last short); the FTP objects
# begin with 1000 bytes stored before

mkdir "$d/src";
for my $i (0 .. $nsftp - 1) {
    system("head -c @{[ 11 * 1048576 + 1000 * $i + 7 ]} /dev/urandom "
           . "> $d/src/s$i") == 0 or die;
}
for my $i (0 .. $nftp - 1) {
    system("head -c 1000 /dev/urandom > $d/src/h$i") == 0 or die;
    system("head -c @{[ 11 * 1048576 + 333 * $i ]} /dev/urandom "
           . "> $d/src/a$i") == 0 or die;
}

$t->run();

# the start's sweep of multipart uploads left behind is over (moto says
# every upload was initiated in 2010: a sweep still running would abort
# the test's own)
$t->wait_for(sub { $t->read_file('error.log')
                   =~ /multipart uploads older than/ }, 60);

my ($ftp, $sftp) = (port(8021), port(8022));

sub stats {
    my ($body) = (http_get(port(8080), '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    return eval { decode_json($body // '') } || {};
}

sub pool_idle {
    my $p = stats()->{buffer_pool} // {};
    return defined $p->{in_use} && $p->{in_use} == 0
        && defined $p->{reserved} && $p->{reserved} == 0;
}

is(stats()->{buffer_pool}{total}, 24, 'a pool of 24 chunks');

# the small objects the FTP uploads append to

for my $i (0 .. $nftp - 1) {
    system("curl -s -S --max-time 60 -T $d/src/h$i "
           . "ftp://bob:pw\@127.0.0.1:$ftp/a$i");
}
is(join(',', map { length(s3_object($s3, "srv/bob/a$_") // '') }
        0 .. $nftp - 1),
   join(',', (1000) x $nftp), 'the small objects stored');

# every client at once, each bounded by $limit

my @pids;
for my $i (0 .. $nsftp - 1) {
    $t->write_file("batch-s$i", "put $d/src/s$i s$i\n");
    my $pid = fork() // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/sftp-$i.out") or die;
        open(STDERR, '>&', \*STDOUT) or die;
        exec('timeout', $limit, 'sftp', '-B', 261120, '-R', 64,
             '-b', "$d/batch-s$i", '-P', $sftp,
             '-o', 'StrictHostKeyChecking=no',
             '-o', 'UserKnownHostsFile=/dev/null',
             '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10',
             '-i', "$d/key", 'bob@127.0.0.1') or die;
    }
    push @pids, $pid;
}
for my $i (0 .. $nftp - 1) {
    my $pid = fork() // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/ftp-$i.out") or die;
        open(STDERR, '>&', \*STDOUT) or die;
        exec('curl', '-s', '-S', '--max-time', $limit, '--append',
             '-T', "$d/src/a$i", "ftp://bob:pw\@127.0.0.1:$ftp/a$i") or die;
    }
    push @pids, $pid;
}

# while they run: what the pool holds, for the diagnosis of a stall

my (%rc, $seen);
for (1 .. $limit + 30) {
    for my $pid (grep { !exists $rc{$_} } @pids) {
        $rc{$pid} = $? >> 8 if waitpid($pid, WNOHANG) == $pid;
    }
    last if keys %rc == @pids;
    my $p = stats()->{buffer_pool} // {};
    $seen = "in_use $p->{in_use} reserved $p->{reserved} "
        . "waiters $p->{waiters}" if defined $p->{in_use};
    sleep 1;
}
is(scalar keys %rc, scalar @pids, 'every client ended');

# what is left is stopped with TERM: timeout passes it to sftp, which
# stops its ssh (KILL would leave the ssh behind, and its session)
kill('TERM', grep { !exists $rc{$_} } @pids);
waitpid($_, 0) for grep { !exists $rc{$_} } @pids;

is(join(',', map { $rc{$_} // 'stuck' } @pids[0 .. $nsftp - 1]),
   join(',', (0) x $nsftp),
   "$nsftp OpenSSH sftp puts of 255 KiB WRITEs completed")
    or diag("the pool at the end: @{[ $seen // '?' ]}\n",
            join("\n", map { $t->read_file("sftp-$_.out") } 0 .. $nsftp - 1));
is(join(',', map { $rc{$_} // 'stuck' } @pids[$nsftp .. $#pids]),
   join(',', (0) x $nftp), "$nftp FTP APPEs at the same time completed");

my @bad = grep {
    md5_hex(s3_object($s3, "srv/bob/s$_") // '')
        ne md5_hex($t->read_file("src/s$_"))
} 0 .. $nsftp - 1;
is("@bad", '', 'every SFTP object is byte-identical');

@bad = grep {
    md5_hex(s3_object($s3, "srv/bob/a$_") // '')
        ne md5_hex($t->read_file("src/h$_") . $t->read_file("src/a$_"))
} 0 .. $nftp - 1;
is("@bad", '', 'every FTP APPE object is the small one, then the new bytes');

is(s3_uploads($s3), 0, 'no multipart upload left');

$t->wait_for(\&pool_idle, 60);
ok(pool_idle(), 'the pool: no chunk in use, none reserved')
    or diag(encode_json(stats()->{buffer_pool} // {}));
unlike($t->read_file('error.log'), qr/exited on signal/,
    'no worker died');

$t->done();
