#!/usr/bin/perl

# s3_pool.t -- uploads to an S3 storage share a small buffer pool without
# deadlocking: 16 MiB of 256 KiB chunks, parts of 5 MiB (20 chunks each,
# gathered whole), one worker.  16 SFTP sessions (paramiko, 48 WRITEs in
# flight each) and 4 FTP uploads (curl -T) at once, of a few parts each:
# every one completes, every object is byte-identical (MD5), no multipart
# upload is left and the pool has every chunk back.  Then the same with
# the clients killed (SIGKILL) once bytes move: the pool has every chunk
# back, the multipart uploads are aborted, nothing is under the SFTP
# names (an FTP upload ends with its data connection: a prefix), and an
# upload afterwards completes.  Then all of it again with two workers,
# whose parts share one cap (buffer_pool.reserved, at most all but an
# eighth of the pool for the parts of every worker together; with a cap
# per worker the two workers' parts took the whole pool and every upload
# stalled), this time with WRITEs of 255 KiB, as OpenSSH's sftp sends,
# which run from a part into the next (refused whole, the write that
# would complete a part held it, and every upload stalled), and a worker
# killed (SIGKILL) while its parts hold chunks:
# the master takes its chunks and its reservations back.  Every wait is
# bounded; the sanitizer build runs fewer sessions.  Every process is
# stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use File::Spec;
use Digest::MD5 qw/md5_hex/;
use Test::Siftpd::S3 qw/s3_storage_moto s3_object s3_keys s3_uploads s3_stats
    s3_pool_conf/;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

# the sanitizer build is several times slower: fewer sessions there; the
# time limits are for a machine busy with other tests, not a speed bound
my $san = `@{[ $t->binary() ]} -V 2>&1` =~ /--with-sanitizers/;
my ($nsftp, $nftp) = $san ? (6, 2) : (16, 4);

# what a client may take at most (a stalled pool fails within it)
my $limit = 200;

s3_pool_conf($t, $s3, '16m');

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
my $key = $t->user_key('bob');

# what the clients send: 11 MiB and a bit (three parts, the last short)
# for SFTP, 7 MiB and a bit for FTP

mkdir "$d/src";
for my $i (0 .. $nsftp - 1) {
    system("head -c @{[ 11 * 1048576 + 1000 * $i + 7 ]} /dev/urandom "
           . "> $d/src/s$i") == 0 or die;
}
for my $i (0 .. $nftp - 1) {
    system("head -c @{[ 7 * 1048576 + 333 * $i ]} /dev/urandom "
           . "> $d/src/f$i") == 0 or die;
}

# siftpd -t: more parts in flight than an upload holds, and a part that
# does not fit in what the pool lends parts, refused with file:line

my $conf = $t->read_file('siftpd.conf');
my $line = 1 + (() = substr($conf, 0, index($conf, 'storage cloud'))
    =~ /\n/g);

(my $bad = $conf) =~ s/(s3_part_size 5m;)/$1 s3_parts_in_flight 17;/;
$t->write_file('bad.conf', $bad);
my (undef, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/\Q$d\E\/bad\.conf:\d+: .*"17" is not from 1 to 16/,
    'siftpd -t refuses 17 parts in flight with file:line');

($bad = $conf) =~ s/buffer_pool_bytes 16m;/buffer_pool_bytes 5m;/;
$t->write_file('bad.conf', $bad);
(undef, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/"s3_part_size" of 5242880 bytes needs 20 chunks .* lends S3 parts 18 .*in storage "cloud" in \Q$d\E\/bad\.conf:$line\b/,
    'siftpd -t refuses a part the pool cannot lend with file:line');

# slot 0's sweep of multipart uploads left behind, at each start, over:
# moto says every upload was initiated in 2010, so a sweep still running
# aborts the test's uploads as left behind
sub swept {
    my ($n) = @_;
    $t->wait_for(sub { my @l = $t->read_file('error.log')
                           =~ /multipart uploads older than/g;
                       @l >= $n }, 60);
}

$t->run();
swept(1);

my ($ftp, $sftp) = (port(8021), port(8022));

sub stats {
    return s3_stats(port(8080));
}

sub pool_back {
    my $p = stats()->{buffer_pool} // {};
    return defined $p->{free} && $p->{free} == ($p->{total} // -1);
}

is(stats()->{buffer_pool}{total}, 64, 'a pool of 64 chunks');

# the SFTP clients: each session a thread, its WRITEs of $step bytes kept
# 48 in flight; "sessions N fine M" at the end, "moving" once bytes move

$t->write_file('up.py', <<'PY');
import sys, struct, threading, time
sys.path.insert(0, sys.argv[5])
from sftp_raw import pkt, s, reply
import sftp_raw

port, key, src, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
name, limit, STEP = sys.argv[6], int(sys.argv[7]), int(sys.argv[8])
hold = sys.argv[9] == '1'
WINDOW = 48

def handle_of(r):
    assert r is not None and r[0] == 102, r and r[:20]
    return r[9:9 + struct.unpack('>I', r[5:9])[0]]

def upload(i, out):
    try:
        body = open('%s/s%d' % (src, i), 'rb').read()
        tr = sftp_raw.login(port, key, user='bob')
        ch = sftp_raw.channel(tr)
        ch.settimeout(limit - 20)
        ch.sendall(pkt(3, s(('%ss%d' % (name, i)).encode())
                       + struct.pack('>II', 0x1a, 0), 1))
        h = handle_of(reply(ch))
        offs = list(range(0, len(body), STEP))
        sent = bad = 0
        for k, o in enumerate(offs):
            if k >= WINDOW:
                r = reply(ch)
                bad += r is None or r[0] != 101 \
                       or struct.unpack('>I', r[5:9])[0] != 0
            ch.sendall(pkt(6, s(h) + struct.pack('>Q', o)
                           + s(body[o:o + STEP]), 100 + k))
            if k == WINDOW:
                print('moving %d' % i, flush=True)
                if hold:
                    time.sleep(limit)           # until killed
        for _ in range(min(WINDOW, len(offs))):
            r = reply(ch)
            bad += r is None or r[0] != 101 \
                   or struct.unpack('>I', r[5:9])[0] != 0
        ch.sendall(pkt(4, s(h), 2))
        r = reply(ch)
        bad += r is None or struct.unpack('>I', r[5:9])[0] != 0
        tr.close()
        out.append(bad)
    except Exception as e:
        out.append('%d: %r' % (i, e))

out = []
ts = [threading.Thread(target=upload, args=(i, out)) for i in range(n)]
for th in ts:
    th.start()
for th in ts:
    th.join(limit)
print('sessions %d fine %d' % (n, len([r for r in out if r == 0])))
for r in out:
    if r != 0:
        print('failed', r)
PY

my $lib = File::Spec->rel2abs('t/lib');

# 32 KiB WRITEs fall inside parts; OpenSSH's sftp writes 255 KiB, which
# runs over the end of a part into the next.  $hold: the SFTP sessions stop
# once bytes move, so that their parts hold chunks until they are killed
my ($step, $hold) = (32768, 0);

# the clients at once under names that begin with prefix, their output in
# files; pids to wait for or kill (the clients bound their own time)

sub clients {
    my ($tag, $prefix) = @_;
    my @pids;

    my $pid = fork() // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/sftp-$tag.out") or die;
        open(STDERR, '>&', \*STDOUT) or die;
        exec('/usr/bin/python3', "$d/up.py", $sftp, $key, "$d/src", $nsftp,
             $lib, $prefix, $limit, $step, $hold) or die;
    }
    push @pids, $pid;

    for my $i (0 .. $nftp - 1) {
        $pid = fork() // die;
        if ($pid == 0) {
            open(STDOUT, '>', "$d/ftp-$tag-$i.out") or die;
            open(STDERR, '>&', \*STDOUT) or die;
            exec('curl', '-s', '-S', '--max-time', $limit, '-T', "$d/src/f$i",
                 "ftp://bob:pw\@127.0.0.1:$ftp/${prefix}f$i") or die;
        }
        push @pids, $pid;
    }

    return @pids;
}

# all of them together: every upload completes, byte-identical; the
# checks' names begin with $who

sub all_at_once {
    my ($who, $tag, $prefix) = @_;

    my @pids = clients($tag, $prefix);
    my %rc;
    for my $pid (@pids) {
        waitpid($pid, 0);
        $rc{$pid} = $? >> 8;
    }

    like($t->read_file("sftp-$tag.out"), qr/^sessions $nsftp fine $nsftp$/m,
        "$who$nsftp SFTP uploads with 48 WRITEs in flight each completed")
        or diag(substr($t->read_file("sftp-$tag.out"), 0, 2000));
    is(join(',', map { $rc{$_} } @pids[1 .. $#pids]), join(',', (0) x $nftp),
        "$who$nftp FTP uploads at the same time completed");

    my @bad = grep {
        md5_hex(s3_object($s3, "srv/bob/$prefix$_") // '')
            ne md5_hex($t->read_file("src/$_"))
    } (map({ "s$_" } 0 .. $nsftp - 1), map({ "f$_" } 0 .. $nftp - 1));
    is("@bad", '', "${who}every object is byte-identical");

    is(s3_uploads($s3), 0, "${who}no multipart upload left");
    $t->wait_for(\&pool_back, 60);
    ok(pool_back(), "${who}every chunk back in the pool")
        or diag(encode_json(stats()->{buffer_pool} // {}));
}

all_at_once('', 'all', '');

# the same clients killed once bytes move: everything is given back

my @pids = clients('kill', 'k');
$t->wait_for(sub { $t->read_file('sftp-kill.out') =~ /^moving/m }, 120);
ok($t->read_file('sftp-kill.out') =~ /^moving/m, 'the killed uploads moved');
kill('KILL', @pids);
waitpid($_, 0) for @pids;

$t->wait_for(\&pool_back, 120);
ok(pool_back(), 'killed: every chunk back in the pool')
    or diag(encode_json(stats()->{buffer_pool} // {}));
$t->wait_for(sub { s3_uploads($s3) == 0 }, 120);
is(s3_uploads($s3), 0, 'killed: the multipart uploads aborted');
my %keys = s3_keys($s3, 'srv/bob/ks');
is(join(' ', sort keys %keys), '', 'killed: nothing under the SFTP names');

# an FTP upload ends where its data connection does: what a killed curl
# sent is the object, a prefix of the file

%keys = s3_keys($s3, 'srv/bob/kf');
my @bad = grep {
    my $o = s3_object($s3, $_) // 'none';
    $o ne substr($t->read_file('src/' . s{.*/k}{}r), 0, length $o);
} sort keys %keys;
is("@bad", '', 'killed: an FTP object is what was sent');

# afterwards an upload completes

system("curl -s -S --max-time 120 -T $d/src/f0 "
       . "ftp://bob:pw\@127.0.0.1:$ftp/after");
is($? >> 8, 0, 'an upload after them ran');
is(md5_hex(s3_object($s3, 'srv/bob/after') // ''),
   md5_hex($t->read_file('src/f0')), 'and is byte-identical');
$t->wait_for(\&pool_back, 60);
ok(pool_back(), 'the pool whole again');
is(stats()->{buffer_pool}{reserved}, 0, 'nothing reserved by parts');

# two workers: their parts together within one cap, the uploads spread
# over both (each worker's uploads logged their own lines)

$t->stop();
($conf = $t->read_file('siftpd.conf'))
    =~ s/worker_processes 1;/worker_processes 2;/ or die;
$t->write_file('siftpd.conf', $conf);
$t->run();
swept(2);
$t->wait_for(sub { $t->workers() == 2 }, 30);
is(scalar $t->workers(), 2, 'two workers');

# and WRITEs of 255 KiB, as OpenSSH's: the one that completes a part runs
# into the next, which may have to wait for the cap

$step = 261120;
my $logged = length $t->read_file('error.log');
all_at_once('two workers, 255 KiB writes: ', 'two', 'w');

my %by = map { $_ => 1 }
    substr($t->read_file('error.log'), $logged) =~ /^\S+ \S+ \[\w+\] (\d+)#/mg;
# which worker accepts a client is the kernel's choice (one that is idle
# may take them all on a busy machine): said, not checked
my $served = grep { $by{$_} } $t->workers();
diag("two workers: only one of them served uploads in this run")
    if $served < 2;
is(stats()->{buffer_pool}{reserved}, 0, 'two workers: nothing reserved');

# a worker killed while its parts hold chunks: the master takes back its
# chunks and its reservations, the other worker goes on

($step, $hold) = (32768, 1);
@pids = clients('wkill', 'x');
$t->wait_for(sub { $t->read_file('sftp-wkill.out') =~ /^moving/m
                   && (stats()->{buffer_pool}{reserved} // 0) > 0 }, 120);
my $reserved = stats()->{buffer_pool}{reserved} // 0;
ok($reserved > 0, "two workers: parts reserved $reserved chunks");

# the worker of the first SFTP session first, the other after it if the
# first held no chunk when it died (its sessions' parts may all have gone
# out): the master takes back what the dead one held, and the worker
# left, then the new ones, go on

my @w = $t->workers();
my %seen;
for my $victim (grep { !$seen{$_}++ }
                ($t->conn_owner($pids[0], @w) // $w[0]), @w)
{
    my @sweeper = $t->read_file('error.log')
        =~ /\[info\] (\d+)#\d+: [^\n]*multipart uploads older than/g;
    kill('KILL', $victim);
    $t->wait_for(sub { $t->workers() == 2 && !grep { $_ == $victim }
                       $t->workers() }, 30);
    swept(@sweeper + 1) if ($sweeper[-1] // 0) == $victim;   # slot 0
    last if $t->wait_log(qr/took back \d+ buffer pool chunks/, 5);
}
kill('KILL', @pids);
waitpid($_, 0) for @pids;

$t->wait_for(sub { pool_back()
                   && stats()->{buffer_pool}{reserved} == 0 }, 120);
ok(pool_back(), 'worker killed: every chunk back in the pool')
    or diag(encode_json(stats()->{buffer_pool} // {}));
is(stats()->{buffer_pool}{reserved}, 0,
    'worker killed: its reservations given back');
like($t->read_file('error.log'), qr/took back \d+ buffer pool chunks/,
    'worker killed: the master took its chunks back');

system("curl -s -S --max-time 120 -T $d/src/f0 "
       . "ftp://bob:pw\@127.0.0.1:$ftp/wafter");
is(md5_hex(s3_object($s3, 'srv/bob/wafter') // ''),
   md5_hex($t->read_file('src/f0')), 'worker killed: an upload afterwards');

$t->done();
