#!/usr/bin/perl

# s3_write_cut.t -- an SFTP session that ends while its WRITEs wait in an
# S3 upload whose parts S3 does not answer: moto behind t/s3_hostile.py
# (calm), which drips the answers to every request of the key once the
# file is open, so the two parts in flight stay out and the pipelined
# WRITEs behind them wait in the uploader.  The client is killed; the
# session's end fails the waiting WRITEs, the last of which lets the file
# go, and the close that follows is over at once.  The worker lives on
# (the sanitizer build would report a use of the freed handle), the
# upload leaves no object, and once the endpoint answers again no
# multipart upload and no pool chunk.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::S3 qw/s3_storage s3_proxied s3_object s3_uploads
    s3_stats s3_pool_whole/;

my $t = Test::Siftpd->new()->has('sftp', 's3_storage', 'http');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my ($moto, $proxy) = s3_proxied($t, 't/s3_hostile.py', 1, 0);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $proxy, 's3_part_size 5m', 's3_retries 0',
    's3_timeout 30s') ]}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage cloud;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->run();

my $master = $t->read_file('siftpd.pid') =~ /(\d+)/ ? $1 : 0;
$t->wait_for(sub { $t->workers($master) == 1 }, 30);
my @workers = $t->workers($master);
is(scalar @workers, 1, 'one worker');

# open, then the holds, then 15 MiB of WRITEs of 255 KiB (as OpenSSH's:
# one runs from the second part into the third, which cannot be held
# while two are out) sent without waiting for their answers (from a
# thread: the channel's window may stop it), then it waits to be killed

$t->write_file('cut.py', <<'PY');
import subprocess, sys, threading, time, paramiko
port, proxy = int(sys.argv[1]), sys.argv[2]
tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', password='pw')
s = paramiko.SFTPClient.from_transport(tr)
f = s.open('cut', 'wb')
subprocess.run(['curl', '-s', '--max-time', '10', 'http://127.0.0.1:%s'
                '/__force?kind=hold&key=srv/bob/cut%%3FpartNumber&count=50' % proxy],
               check=True, stdout=subprocess.DEVNULL)
block = b'x' * 261120
def send():
    for i in range(60):
        s._async_request(type(None), paramiko.sftp.CMD_WRITE, f.handle,
                         paramiko.py3compat.long(i * 261120), block)
threading.Thread(target=send, daemon=True).start()
print('writing', flush=True)
time.sleep(120)
PY

my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0) {
    open(STDOUT, '>', "$d/cut.out") or die;
    open(STDERR, '>&', \*STDOUT) or die;
    exec('timeout', '150', '/usr/bin/python3', "$d/cut.py", port(8022),
        $proxy) or die;
}

END {
    local $?;
    if ($pid) {
        kill('KILL', $pid);
        waitpid($pid, 0);
    }
}

# the parts held by the endpoint, with their chunks reserved, and the
# WRITE that runs into the third part waiting in its chunk

ok($t->wait_for(sub {
    my $p = stats()->{buffer_pool} // {};
    return $t->read_file('cut.out') =~ /^writing/m
        && ($p->{reserved} // 0) > 0
        && ($p->{total} // 0) - ($p->{free} // 0) > $p->{reserved}
        && endpoint('log') =~ /^hold /m;
}, 60), 'the parts are held, WRITEs wait behind them')
    or diag($t->read_file('cut.out'), endpoint('log'),
        explain(stats()->{buffer_pool}));

# the timeout's child first (the python), then the timeout
system("pkill -KILL -P $pid");
kill('KILL', $pid);
waitpid($pid, 0);
$pid = 0;

ok($t->wait_log(qr/sftp session closed/, 30), 'the session ended');

# the endpoint answers again: the parts fail or end, the upload is aborted

endpoint('force?kind=hold&key=srv/bob/cut%3FpartNumber&count=0');
endpoint('release');

ok($t->wait_for(sub { pool_back() }, 60), 'every pool chunk back')
    or diag(explain(stats()->{buffer_pool}));
ok($t->wait_for(sub { s3_uploads($moto) == 0 }, 60),
    'no multipart upload left');
ok(!defined s3_object($moto, 'srv/bob/cut'), 'no object under the name');

is(join(' ', $t->workers($master)), join(' ', @workers),
    'the worker is the same process');
my $log = $t->read_file('error.log');
unlike($log, qr/exited on signal|\[alert\]|ERROR: AddressSanitizer/,
    'no worker died') or diag(join "\n", grep { /signal|alert|Sanit/ }
    split /\n/, $log . $t->read_file('stderr'));

$t->done();


sub endpoint {
    my ($what) = @_;
    return `curl -s --max-time 10 'http://127.0.0.1:$proxy/__$what'`;
}

sub stats {
    return s3_stats(port(8080));
}

sub pool_back {
    return s3_pool_whole(port(8080));
}
