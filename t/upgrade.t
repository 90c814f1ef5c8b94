#!/usr/bin/perl

# upgrade.t -- the live binary upgrade: USR2 while FTP, FTPS and SFTP
# transfers run starts the new binary on the inherited listeners with the
# pid file renamed to siftpd.pid.oldbin; after WINCH to the old master only
# the new master's workers take sessions; QUIT lets the old master finish
# every transfer byte for byte and exit.  Then a new binary that cannot
# start (a broken configuration, a binary that is no program) leaves the
# running master serving with its pid file, and -s upgrade works as USR2.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep/;
use File::Copy qw/copy/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_login ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp/);
my $d = $t->testdir();

plan(skip_all => 'curl without sftp')
    unless `curl -V 2>&1` =~ /^Protocols:.*\bsftp\b/m;

# transfers in flight at the upgrade, a third each FTP, FTPS and SFTP, half
# of them uploads; each moves $size bytes at $rate bytes/s, so that all are
# midway when USR2 comes (30 run in about 10 s on two loaded cores)

my $transfers = $ENV{TEST_SIFTPD_UPGRADE_TRANSFERS} // 30;
my $size = 2 * 1024 * 1024;
my $rate = 200 * 1024;

local $SIG{ALRM} = sub { die "upgrade.t timed out\n" };
alarm(150);

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/up";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 256; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        tls_login optional;
        tls_data optional;
        data_timeout 60s;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF

$t->user_add('alice', 'pw-a',
    perms => 'list,download,upload,overwrite,delete,rename');
my $key = $t->user_key('alice');

for my $n (0 .. 2) {
    open my $fh, '>', "$d/data/alice/src$n.bin" or die;
    print $fh pack('N', $_ * 7919 + $n) x 256 for 1 .. $size / 1024;
    close $fh;
}

# the master runs a copy of the binary, which the second case replaces
copy($t->binary(), "$d/siftpd") or die "copy: $!";
chmod 0755, "$d/siftpd";

$t->run(undef, binary => "$d/siftpd");
my $old = $t->pid();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 20), 'two workers');

# the transfers, each a curl of its own

my $ftp = port(8021);
my $sftp = port(8022);
my $curl = "curl -sS --limit-rate $rate --max-time 100 --insecure";
my (%running, @checks);

# one login first: the others are answered from the verification cache,
# not queued for argon2id (where a burst from one address is refused)
close(ftp_login($ftp, 'alice', 'pw-a'));

for my $i (0 .. $transfers - 1) {
    my $proto = (qw/ftp ftps sftp/)[$i % 3];
    my $up = ($i / 3) % 2;
    my $src = 'src' . ($i % 3) . '.bin';
    my ($url, $auth);

    if ($proto eq 'sftp') {
        $url = "sftp://127.0.0.1:$sftp/";
        $auth = "-u alice: --key $key --pubkey $key.pub";
    } else {
        $url = "ftp://127.0.0.1:$ftp/";
        $auth = '-u alice:pw-a' . ($proto eq 'ftps' ? ' --ssl-reqd' : '');
    }

    my $cmd = $up
        ? "$curl $auth -T $d/data/alice/$src ${url}up$i.bin"
        : "$curl $auth -o $d/up/down$i.bin $url$src";

    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', "$d/curl$i.out";
        open STDERR, '>&', \*STDOUT;
        exec 'sh', '-c', $cmd;
        exit 127;
    }

    $running{$pid} = $i;
    push @checks, [$proto, $up, $src, $i];
}

# midway: every download has bytes, every upload a temporary file

sub temp_files {
    opendir my $dh, "$d/data/alice" or return 0;
    my $n = grep { /\.sft-/ } readdir $dh;
    closedir $dh;
    return $n;
}

my @downs = map { "$d/up/down$_->[3].bin" } grep { !$_->[1] } @checks;
my $ups = grep { $_->[1] } @checks;

ok($t->wait_for(sub {
    !grep({ !-s $_ } @downs) && temp_files() == $ups }, 30),
    "$transfers transfers running");

# USR2: the new master on the same listeners, the pid file handed over

kill 'USR2', $old;
my $new = $t->wait_new_master($old);
ok($new, 'USR2: the new master wrote the pid file');
is($t->pidfile_pid('siftpd.pid.oldbin'), $old,
    'USR2: the old pid file renamed to siftpd.pid.oldbin');
ok($t->wait_for(sub { scalar($t->workers($new)) == 2 }, 30),
    'USR2: the new master started its workers');
is(scalar(grep { $_ != $new } $t->workers()), 2,
    'USR2: the old workers serve on');
is((grep { !-s $_ } @downs) + 0, 0, 'USR2: no transfer cut');

# WINCH: the old workers take no session any more, the new ones do

kill 'WINCH', $old;
ok($t->wait_log(qr/stopping the workers, new binary $new serves/),
    'WINCH: the old master lets its workers go');

my @new_workers = $t->workers($new);
my %new_worker = map { $_ => 1 } @new_workers;
my %owners;

for my $n (1 .. 6) {
    my $s = ftp_login($ftp, 'alice', 'pw-a');
    my $owner = $t->conn_owner($s, @new_workers, $t->workers());
    $owners{$owner && $new_worker{$owner} ? 'new' : 'other'}++;
    ftp_cmd($s, 'QUIT');
    close $s;

    $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$sftp", Timeout => 10)
        or die "sftp connect: $!";
    my $banner = <$s> // '';
    $owner = $banner =~ /^SSH-2\.0-/
        ? $t->conn_owner($s, @new_workers, $t->workers()) : undef;
    $owners{$owner && $new_worker{$owner} ? 'new' : 'other'}++;
    close $s;
}

is($owners{new} // 0, 12,
    'WINCH: new FTP and SFTP sessions served by the new master\'s workers');

# QUIT: the old master finishes the transfers and exits

kill 'QUIT', $old;
ok($t->wait_for(sub { waitpid($old, WNOHANG) == $old }, 90),
    'QUIT: the old master exited');
delete $t->{_pid};

while (%running) {
    my $pid = waitpid(-1, 0);
    last if $pid <= 0;
    my $i = delete $running{$pid} // next;
    $checks[$i][4] = $? >> 8;
}

my @bad;
for my $c (@checks) {
    my ($proto, $up, $src, $i, $rc) = @$c;
    my ($a, $b) = $up ? ("$d/data/alice/$src", "$d/data/alice/up$i.bin")
                      : ("$d/data/alice/$src", "$d/up/down$i.bin");
    push @bad, "$proto " . ($up ? 'upload' : 'download') . " $i: curl $rc "
        . $t->read_file("curl$i.out")
        unless defined $rc && $rc == 0 && system('cmp', '-s', $a, $b) == 0;
}

is(join("\n", @bad), '', "all $transfers transfers complete, byte for byte");
ok(!-e "$d/siftpd.pid.oldbin", 'QUIT: the old pid file removed');
is($t->pidfile_pid(), $new, 'the pid file names the new master');

# a new binary that cannot start leaves the running master as it was

sub served {
    my $s = eval { ftp_login($ftp, 'alice', 'pw-a') } or return 0;
    my $r = ftp_cmd($s, 'PWD');
    close $s;
    return $r =~ /^257 /;
}

my $conf = $t->read_file('siftpd.conf');
$t->write_file('siftpd.conf', "$conf\nno_such_directive on;\n");

my ($rc) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'upgrade');
is($rc, 1, '-s upgrade reads the broken configuration too, and fails');

kill 'USR2', $new;
ok($t->wait_log(qr/new binary \d+ exited with code 1, the old binary serves on/),
    'broken configuration: the new binary exits, one log line says so');
ok($t->wait_for(sub { !-e "$d/siftpd.pid.oldbin" }, 10)
    && $t->pidfile_pid() == $new, 'broken configuration: pid file restored');
ok(served(), 'broken configuration: the master serves on');

$t->write_file('siftpd.conf', $conf);
unlink "$d/siftpd";
$t->write_file('siftpd', "not a program\n");

($rc) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'upgrade');
is($rc, 0, '-s upgrade');
ok($t->wait_log(qr/execve\(\) "\Q$d\E\/siftpd" failed/),
    'no binary: execve() failure logged');
ok($t->wait_for(sub { 2 == (() = $t->read_file('error.log')
    =~ /new binary \d+ exited with code 1, the old binary serves on/g) }),
    'no binary: the new binary exits, one log line says so');
ok($t->wait_for(sub { !-e "$d/siftpd.pid.oldbin" }, 10)
    && $t->pidfile_pid() == $new, 'no binary: pid file restored');
ok(served(), 'no binary: the master serves on');
is(scalar($t->workers($new)), 2, 'no binary: its workers are there');

$t->stop();
ok(!kill(0, $new), 'the new master stopped on QUIT');

alarm(0);
$t->done();
