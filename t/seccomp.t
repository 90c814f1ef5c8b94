#!/usr/bin/perl

# seccomp.t -- the workers' system call filter: on by default, a worker
# that makes a call outside the allow-list (personality(2), through the
# hello module's probe) gets ENOSYS, names the call in the error log and
# serves on; a packet socket, memory made writable and executable, a new
# process and a signal to init are refused the same way by the argument
# rules; FTP and SFTP transfers work under it; "seccomp log" lets the
# call through for the kernel's audit log to name; "seccomp off" installs
# nothing and says so; /proc/PID/status shows the mode of each worker.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Basename qw/dirname/;
use File::Spec;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http', 'ftp', 'sftp');
my $d = $t->testdir();
my $objs = File::Spec->rel2abs($ENV{TEST_SIFTPD_OBJS} || dirname($t->binary()));
my $hello = "$objs/modules/sft_hello_module.so";

plan(skip_all => "no $hello (configure --add-dynamic-module=modules/hello)")
    unless -f $hello;
plan(skip_all => 'no seccomp filters in this kernel')
    unless `grep -s '^Seccomp:' /proc/self/status` =~ /^Seccomp:/;
plan(skip_all => 'no curl or sftp')
    unless system('curl --version >/dev/null 2>&1') == 0 && -x '/usr/bin/sftp';

mkdir "$d/data";
mkdir "$d/data/alice";

my $user = $> == 0 ? "user nobody nogroup;\n" : '';
chmod 0777, "$d/data", "$d/data/alice" if $user;

sub conf {
    my ($mode) = @_;
    $t->write_file_expand('siftpd.conf', <<"EOF2");
load_module $hello;
%%TEST_GLOBALS%%
${user}${mode}worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        hello_syscall_probe on;
    }
}
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF2
}

sub status {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/status" or return '';
    local $/;
    return <$fh> // '';
}

# a worker takes its title once its filter is in place

sub title {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/cmdline" or return '';
    local $/;
    return (split /\0/, <$fh> // '')[0] // '';
}

sub seccomp_of_worker {
    $t->wait_for(sub { my @w = $t->workers();
        @w == 1 && title($w[0]) eq 'siftpd: worker process' });
    my ($w) = $t->workers();
    return (defined $w && status($w) =~ /^Seccomp:\s+(\d+)$/m) ? $1 : '';
}

sub body {
    my ($r) = @_;
    return $r =~ /\r\n\r\n(.*)\z/s ? $1 : $r;
}

# the default: on; a refused call fails with ENOSYS and is named

conf('');
$t->user_add('alice', 'pw-a', perms =>
    'list,download,upload,overwrite,delete,rename,mkdir,rmdir');
my $key = $t->user_key('alice');

$t->run();
is(seccomp_of_worker(), 2, 'default: the worker runs under a filter');
my ($w) = $t->workers();

like(body(http_get(port(8080), '/hello/personality')),
    qr/^personality -1 errno 38$/m, 'on: the refused call fails with ENOSYS');
ok($t->wait_log(qr/\[alert\] $w#\d+: seccomp refused system call \d+ \(personality\), it fails with ENOSYS$/m),
    'on: the error log names the refused call')
    or diag($t->read_file('error.log'));

# calls on the list, refused for their arguments

for (['packet', 'socket'], ['wx', 'mprotect'], ['fork', 'clone'],
    ['kill', 'kill'])
{
    my ($probe, $call) = @$_;
    like(body(http_get(port(8080), "/hello/$probe")),
        qr/^$probe -1 errno 38$/m, "on: $probe fails with ENOSYS");
    ok($t->wait_log(qr/\[alert\] $w#\d+: seccomp refused system call \d+ \($call\), it fails with ENOSYS$/m),
        "on: $probe: the error log names $call");
}

like(http_get(port(8080), '/hello'), qr/^HTTP\/1.1 200 OK/,
    'on: the worker serves on after a refused call');
is(join(',', $t->workers()), $w, 'on: the same worker, not a new one');

# transfers under the filter: FTP with curl, SFTP with OpenSSH's sftp

my $blob = join '', map { chr(($_ * 7) % 251) } 0 .. 300_000;
$t->write_file('up.bin', $blob);
my $ftp = 'ftp://alice:pw-a@127.0.0.1:' . port(8021);

is(system("curl -s -T $d/up.bin $ftp/ftp.bin"), 0, 'on: FTP upload');
is(`curl -s $ftp/ftp.bin`, $blob, 'on: FTP download, the same bytes');

$t->write_file('batch', "put $d/up.bin sftp.bin\nget sftp.bin $d/down.bin\n");
my $sftp = "timeout 30 sftp -b $d/batch -P " . port(8022)
    . " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    . " -o BatchMode=yes -i $key alice\@127.0.0.1 2>&1";
my $out = `$sftp`;
is($? >> 8, 0, 'on: SFTP upload and download') or diag($out);
is($t->read_file('down.bin'), $blob, 'on: SFTP download, the same bytes');

is(seccomp_of_worker(), 2, 'on: still filtered after the transfers');
is(join(',', $t->workers()), $w, 'on: no worker died on the way');

$t->stop();

# the expected alerts are this part's only ones

my @alerts = grep { /\[alert\]/ } split /\n/, $t->read_file('error.log');
is(scalar(grep {
        !/seccomp refused system call \d+ \((personality|socket|mprotect|clone|kill)\)/
    } @alerts), 0, 'on: no other alert') or diag(join "\n", @alerts);
rename "$d/error.log", "$d/error-on.log";

# log: the call goes through, and the kernel's audit log names it

conf("seccomp log;\n");
$t->run();
is(seccomp_of_worker(), 2, 'log: the worker runs under a filter');
($w) = $t->workers();
like(body(http_get(port(8080), '/hello/personality')),
    qr/^personality \d+ errno 0$/m, 'log: the call is allowed');
like($t->read_file('error.log'), qr/\[warn\] .*"seccomp log"/,
    'log: a warning at start');

SKIP: {
    skip 'the kernel log is not readable', 1
        unless system('dmesg >/dev/null 2>&1') == 0;
    ok($t->wait_for(sub {
            `dmesg` =~ /type=1326 .* pid=$w .* syscall=\d+ .*code=0x7ffc0000/
        }), 'log: the kernel names the call of the worker');
}

$t->stop();
rename "$d/error.log", "$d/error-log.log";

# off: no filter, and a warning that this is weaker

conf("seccomp off;\n");
$t->run();
is(seccomp_of_worker(), 0, 'off: no filter');
like(body(http_get(port(8080), '/hello/personality')),
    qr/^personality \d+ errno 0$/m, 'off: the call is made');
like($t->read_file('error.log'),
    qr/\[warn\] .*"seccomp off": workers run without a system call filter/,
    'off: a warning at start');

# an unknown mode is refused at the configuration check

$t->write_file_expand('bad.conf',
    "%%TEST_GLOBALS%%\nseccomp strict;\nhttp { server { listen "
    . "127.0.0.1:%%PORT_8080%%; } }\n");
my ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/invalid value "strict" in "seccomp" directive/,
    'an unknown mode is refused');

$t->done();
