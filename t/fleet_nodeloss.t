#!/usr/bin/perl

# fleet_nodeloss.t -- a node lost under load: Debian's HAProxy in front of
# two siftpd nodes (A on 127.0.0.11, B on 127.0.0.12; PROXY protocol v2,
# each node's passive range forwarded to it, a connection to a dead node
# sent to the other) on one bucket of a Ceph cluster (Test::Siftpd::Ceph).
# Twenty FTP transfers through the balancer, half uploads and half
# downloads of 8 MiB, spread over both nodes, all held part-way (uploads
# past their first 5 MiB part, so a multipart upload is under way); then
# node A's master, workers and sweeper are killed with SIGKILL. Every
# transfer on B goes on and completes in its session; every one on A is
# cut; a cut upload's name shows nothing (SIZE 550 through the balancer);
# the clients reconnect through the balancer, land on B, upload again or
# resume their download with REST, and every file is byte-identical. The
# multipart uploads the cut left are aborted by A's sweep when it starts
# again. Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Digest::MD5;
use POSIX qw/:sys_wait_h/;
use Test::Siftpd qw/port port_range children/;
use Test::Siftpd::Ceph;
use Test::Siftpd::HAProxy qw/haproxy_binary haproxy_ftp/;

plan(skip_all => 'no haproxy') unless haproxy_binary();
plan(skip_all => 'no python3') unless -x '/usr/bin/python3';

my $na = Test::Siftpd->new()->has('ftp', 's3_storage');
my $nb = Test::Siftpd->new();
my $d = $na->testdir();

my $ceph = Test::Siftpd::Ceph->start($na);
my $ep = $ceph->endpoint();

$na->write_file('creds', "[default]\naws_access_key_id = @{[ $ceph->access() ]}\n"
    . "aws_secret_access_key = @{[ $ceph->secret() ]}\n");
chmod 0600, "$d/creds";

my $ctl = port(8020);
my @node = (
    { t => $na, name => 'A', addr => '127.0.0.11', port => port(8021) },
    { t => $nb, name => 'B', addr => '127.0.0.12', port => port(8022) },
);
@{$_}{qw/lo hi/} = port_range(24) for @node;

for my $n (@node) {
    $n->{t}->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 128; }
users %%TESTDIR%%/users;
storage cloud {
    driver s3;
    s3_endpoint $ep;
    s3_bucket files;
    s3_prefix fleet/;
    s3_credentials file $d/creds;
    s3_part_size 5m;
    s3_multipart_sweep_age 1s;
    s3_retries 2;
    s3_timeout 60s;
}
ftp {
    server {
        listen $n->{addr}:$n->{port} proxy_protocol;
        proxy_protocol_from 127.0.0.1;
        passive_ports $n->{lo}-$n->{hi};
        pasv_address proxy;
        storage cloud;
    }
}
EOF
    $n->{t}->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
}

# the files: ten to upload, ten to download (put there first, through
# the balancer)

my $size = 8 * 1024 * 1024;

for my $i (0 .. 19) {
    open my $fh, '>:raw', "$d/src$i" or die;
    srand($i + 1);
    print $fh pack('N*', map { int(rand(4294967296)) } 1 .. $size / 4);
    close $fh;
}

$na->run();
$nb->run();

my ($hpid, $up) = haproxy_ftp($na, $ctl, @node);
ok($up, 'a greeting through HAProxy') or diag($na->read_file('haproxy.out'));

my $url = "ftp://bob:pw\@127.0.0.1:$ctl";

my $put = system('curl', '-s', '--max-time', '300', '--interface', '127.0.0.2',
    '-T', "$d/src{10,11,12,13,14,15,16,17,18,19}", "$url/") >> 8;
is($put, 0, 'the ten files to download put through the balancer');

$na->write_file('loss.py', <<'PY');
import ftplib, io, os, socket, sys, threading, time

ctl = int(sys.argv[1])
ranges = {'A': (int(sys.argv[2]), int(sys.argv[3])),
          'B': (int(sys.argv[4]), int(sys.argv[5]))}
d = sys.argv[6]
N, SIZE = 20, 8 * 1024 * 1024
HOLD_UP, HOLD_DOWN = 6 * 1024 * 1024, 1024 * 1024

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': %r' % (why,)))
    sys.stdout.flush()

def node_of(port):
    return [n for n, (lo, hi) in ranges.items() if lo <= port <= hi][0]

def login():
    f = ftplib.FTP(timeout=120, source_address=('127.0.0.2', 0))
    f.connect('127.0.0.1', ctl)
    f.login('bob', 'pw')
    f.voidcmd('TYPE I')
    return f

def data(f, cmd, rest=0):
    # the PASV port tells which node serves the session
    port = ftplib.parse227(f.sendcmd('PASV'))[1]
    s = socket.create_connection(('127.0.0.1', port), timeout=120,
                                 source_address=('127.0.0.2', 0))
    if rest:
        f.sendcmd('REST %d' % rest)
    f.sendcmd(cmd)
    return s, node_of(port)

held = threading.Semaphore(0)
go = threading.Event()
res = [None] * N

def upload(i):
    blob = open('%s/src%d' % (d, i), 'rb').read()
    name = 'up%d' % i
    f = login()
    s, node = data(f, 'STOR ' + name)
    s.sendall(blob[:HOLD_UP])
    held.release()
    go.wait(600)
    try:
        s.sendall(blob[HOLD_UP:])
        finish(f, s)
        res[i] = (node, 'whole', None, None)
        return
    except (OSError, EOFError, ftplib.Error):
        s.close()
    # cut: the name shows nothing; uploaded again through the balancer
    f = login()
    try:
        f.size(name)
        visible = True
    except ftplib.error_perm:
        visible = False
    s, again = data(f, 'STOR ' + name)
    s.sendall(blob)
    finish(f, s)
    res[i] = (node, 'again', again, visible)

def finish(f, s, got=None):
    # the rest of the data, the close and the final reply
    while got is not None:
        c = s.recv(65536)
        if not c:
            break
        got += c
    s.close()
    f.voidresp()
    f.quit()
    return got

def download(i):
    name = 'src%d' % i
    f = login()
    s, node = data(f, 'RETR ' + name)
    got = b''
    while len(got) < HOLD_DOWN:
        got += s.recv(65536)
    held.release()
    go.wait(600)
    try:
        res[i] = (node, 'whole', None, finish(f, s, got))
        return
    except (OSError, EOFError, ftplib.Error):
        s.close()
    # cut: resumed through the balancer where it stopped
    f = login()
    s, again = data(f, 'RETR ' + name, len(got))
    res[i] = (node, 'again', again, finish(f, s, got))

def run(i):
    try:
        (upload if i < 10 else download)(i)
    except Exception as e:
        res[i] = ('?', 'failed: %r' % e, None, None)
        held.release()

ts = [threading.Thread(target=run, args=(i,)) for i in range(N)]
for t in ts:
    t.start()
    time.sleep(0.05)
n = 0
end = time.time() + 600
while n < N and time.time() < end:
    n += held.acquire(timeout=5)
print('held %d' % n)
sys.stdout.flush()

# node A killed by the test meanwhile; it says so with a file
end = time.time() + 120
while not os.path.exists(d + '/killed') and time.time() < end:
    time.sleep(0.1)
go.set()
for t in ts:
    t.join(900)

failed = [r for r in res if r is None or r[1] not in ('whole', 'again')]
check('every transfer ended', not failed, failed)
on = {'A': [r for r in res if r and r[0] == 'A'],
      'B': [r for r in res if r and r[0] == 'B']}
check('the transfers were on both nodes: A %d, B %d'
      % (len(on['A']), len(on['B'])), on['A'] and on['B'])
check('every transfer on B completed in its session',
      all(r[1] == 'whole' for r in on['B']), on['B'])
check('every transfer on A was cut', all(r[1] == 'again' for r in on['A']),
      [r[1] for r in on['A']])
check('the clients came back through the balancer to B',
      all(r[2] == 'B' for r in on['A']), [r[2] for r in on['A']])
ups = [r for i, r in enumerate(res) if i < 10 and r and r[1] == 'again']
check('%d cut uploads: nothing under their names (SIZE 550)' % len(ups),
      ups and not any(r[3] for r in ups), ups)
good = all(r and r[3] == open('%s/src%d' % (d, i), 'rb').read()
           for i, r in enumerate(res) if i >= 10)
check('every download byte-identical, resumed ones included', good)
print('done')
PY

open(my $py, '-|', 'timeout', 1500, '/usr/bin/python3', "$d/loss.py", $ctl,
    $node[0]{lo}, $node[0]{hi}, $node[1]{lo}, $node[1]{hi}, $d) or die;
my $held = <$py> // '';
is($held, "held 20\n", 'twenty transfers held part-way');

# node A lost: its master and every child, at once

my @a = ($na->pid(), children($na->pid()));
kill 'KILL', @a;
waitpid($na->pid(), 0);
delete $na->{_pid};
ok(@a >= 3 && $na->wait_for(sub { !grep { alive($_) } @a }, 30),
    'node A killed: its master and every child') or diag("@a");

$na->write_file('killed', '');

my $out = join('', <$py>);
close $py;

for my $l (split /\n/, $out) {
    ok(!$1, $2) if $l =~ /^(not )?ok (.*)$/;
}
like($out, qr/^done$/m, 'the clients ran to their end') or diag($out);

# every upload in the bucket, byte-identical

my @st = split /\n/, $ceph->s3('get', map { ("fleet/bob/up$_", "$d/got$_") }
    0 .. 9);
my $same = grep { ($st[$_] // '') eq '200'
    && md5_of("$d/got$_") eq md5_of("$d/src$_") } 0 .. 9;
is($same, 10, 'every upload in the bucket, byte-identical');

# A again: its sweep aborts what the cut left

isnt($ceph->s3('uploads'), '0', 'the cut left multipart uploads');
$na->run();
ok($na->wait_log(qr/S3 storage "cloud": \d+ multipart uploads older than 1s aborted under "fleet\/"/, 60),
    'node A again: its sweep aborts them, one line');
is($ceph->s3('uploads'), '0', 'no multipart upload left');

kill 'TERM', $hpid;
waitpid($hpid, 0);

$ceph->stop();

# both nodes stopped; A's log checked here, B's by done()

$na->stop_checked('node A: ');

$nb->done();

# running: there, and not a zombie left for init to reap
sub alive {
    open my $fh, '<', "/proc/$_[0]/stat" or return 0;
    return (<$fh> // '') =~ /^\d+ \(.*\) [^Z]/;
}

sub md5_of {
    open my $fh, '<:raw', $_[0] or return "no $_[0]";
    return Digest::MD5->new()->addfile($fh)->hexdigest();
}
