#!/usr/bin/perl

# docker.t -- the container's entrypoint (pkg/docker/entrypoint.sh) with
# the container's configuration, its paths moved under the test directory
# and its ports to free ones on loopback: it writes the passive ports and
# the external address from the environment into the file the FTP server
# includes and "siftpd -t" accepts the result; values that are not ports
# or an IPv4 address are refused before siftpd runs; started without
# arguments it runs siftpd in the foreground (the entrypoint's pid is the
# master's), the first user's password is on stderr, and an FTPS login's
# PASV names the external address and a port of the range.  No Docker
# daemon is needed.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp http/);
my $d = $t->testdir();

plan(tests => 15);

open my $fh, '<', 'pkg/docker/siftpd.conf' or die "pkg/docker/siftpd.conf: $!";
my $conf = do { local $/; <$fh> };
close $fh;

my ($ftp, $ftps, $sftp, $http) = (port(8021), port(8990), port(8022),
    port(8080));
my $pasv = port(8100);

$conf =~ s{(?<=[ \t])/(etc|run|var|usr)/}{$d/$1/}g;
$conf =~ s/0\.0\.0\.0:21;/127.0.0.1:$ftp;/ or die;
$conf =~ s/0\.0\.0\.0:990 ssl;/127.0.0.1:$ftps ssl;/ or die;
$conf =~ s/0\.0\.0\.0:22;/127.0.0.1:$sftp;/ or die;
$conf =~ s/0\.0\.0\.0:8080;/127.0.0.1:$http;/ or die;
$conf =~ s/^worker_processes .*$/worker_processes 1;/m or die;
$conf =~ s/^user .*$/user nobody nogroup;/m or die;

mkdir "$d/$_" for qw{etc etc/siftpd run var var/log var/log/siftpd var/lib
    var/lib/siftpd};
mkdir "$d/$_" for qw{usr usr/share usr/share/siftpd};
symlink(`cd html && pwd` =~ s/\n//r, "$d/usr/share/siftpd/html") or die;
$t->write_file('etc/siftpd/siftpd.conf', $conf);

my %env = (SIFTPD_BINARY => $t->binary(),
    SIFTPD_CONF => "$d/etc/siftpd/siftpd.conf",
    SIFTPD_RUN_DIR => "$d/run/siftpd",
    SIFTPD_PASSIVE_PORTS => "$pasv-" . ($pasv + 9),
    SIFTPD_EXTERNAL_ADDRESS => '192.0.2.7');

sub entrypoint {
    my ($vars, @args) = @_;

    local %ENV = (%ENV, %env, %$vars);
    $t->sanitizer_env();
    my $out = `sh pkg/docker/entrypoint.sh @args 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = entrypoint({}, '-t');
is($rc, 0, 'siftpd -t accepts what the entrypoint made') or diag($out);
is($t->read_file('run/siftpd/ftp.conf'),
    "# written by entrypoint.sh from the environment\n"
    . "passive_ports  $pasv-" . ($pasv + 9) . ";\npasv_address  192.0.2.7;\n",
    'the passive ports and the external address from the environment');
ok(!-e "$d/etc/siftpd/users", '-t created no user');

($rc, $out) = entrypoint({ SIFTPD_EXTERNAL_ADDRESS => '' }, '-t');
unlike($t->read_file('run/siftpd/ftp.conf'), qr/pasv_address/,
    'no external address, no pasv_address');

($rc, $out) = entrypoint({ SIFTPD_EXTERNAL_ADDRESS => '1.2.3.4; user root' },
    '-t');
ok($rc != 0 && $out =~ /SIFTPD_EXTERNAL_ADDRESS .* is not an IPv4 address/,
    'an address that is not one is refused') or diag($out);

($rc, $out) = entrypoint({ SIFTPD_PASSIVE_PORTS => '30000' }, '-t');
ok($rc != 0 && $out =~ /SIFTPD_PASSIVE_PORTS "30000" is not MIN-MAX/,
    'a port range that is not one is refused') or diag($out);

($rc, $out) = entrypoint({ SIFTPD_PASSIVE_PORTS => '40000-70000' }, '-t');
isnt($rc, 0, 'a port out of range is refused by siftpd -t');

# the container's start: siftpd in the foreground, its log on stderr

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    %ENV = (%ENV, %env);
    $t->sanitizer_env();
    open STDOUT, '>>', "$d/stderr" or die;
    open STDERR, '>>', "$d/stderr" or die;
    exec 'sh', 'pkg/docker/entrypoint.sh';
    exit 127;
}
# the master's pid: the harness stops it by that pid (QUIT), as its own
$t->{_pid} = $pid;

ok($t->wait_for(sub { $t->read_file('run/siftpd/siftpd.pid') eq "$pid\n" },
    60), 'siftpd runs in the foreground as the entrypoint\'s process')
    or diag($t->read_file('stderr'));

my ($pw) = $t->read_file('stderr')
    =~ /created the first user "admin" with the password (\S+)/;
ok(defined $pw, 'the first user\'s password is on stderr');
like($t->read_file('stderr'), qr/\[notice\] created the first user/,
    'and so is the log');
$pw //= 'none';

my $v = `timeout 30 curl -s -v -k --ssl-reqd --disable-epsv --ftp-skip-pasv-ip ftp://admin:$pw\@127.0.0.1:$ftp/ 2>&1`;
my $listed = $? >> 8;
my ($p1, $p2) = $v =~ /227 Entering Passive Mode \(192,0,2,7,(\d+),(\d+)\)/;
ok(defined $p1 && $p1 * 256 + $p2 >= $pasv && $p1 * 256 + $p2 <= $pasv + 9,
    'FTPS: PASV names the external address and a port of the range')
    or diag($v);
is($listed, 0, 'and the listing arrives');

$t->stop();
unlike($t->read_file('stderr'), qr/\[alert\]/, 'no alerts on stderr');
$t->done();
