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
use Test::Siftpd::Transfers;

my $t = Test::Siftpd->new()->has(qw/ftp sftp/);
my $d = $t->testdir();

plan(skip_all => 'curl without sftp')
    unless `curl -V 2>&1` =~ /^Protocols:.*\bsftp\b/m;

# transfers in flight at the upgrade, a third each FTP, FTPS and SFTP, half
# of them uploads, 2 MB each at 200 KB/s, so that all are midway when USR2
# comes (30 take about 20 s on two loaded cores)

my $n = $ENV{TEST_SIFTPD_UPGRADE_TRANSFERS} // 30;

local $SIG{ALRM} = sub { die "upgrade.t timed out\n" };
alarm(150);

Test::Siftpd::Transfers::conf($t, ftp => <<'EOF');
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        tls_login optional;
        tls_data optional;
EOF

$t->user_add('alice', 'pw-a',
    perms => 'list,download,upload,overwrite,delete,rename');
my $key = $t->user_key('alice');

my $ftp = port(8021);
my $sftp = port(8022);
my $x = Test::Siftpd::Transfers->new($t, n => $n, ftp => $ftp,
    sftp => $sftp, key => $key);

# the master runs a copy of the binary, which the second case replaces
copy($t->binary(), "$d/siftpd") or die "copy: $!";
chmod 0755, "$d/siftpd";

$t->run(undef, binary => "$d/siftpd");
my $old = $t->pid();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 20), 'two workers');

# the transfers; one login first: the others are answered from the
# verification cache, not queued for argon2id (where a burst from one
# address is refused)

close(ftp_login($ftp, 'alice', 'pw-a'));

$x->start();
ok($x->midway(), "$n transfers running");

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

# WINCH: the old workers take no session any more, the new ones do

kill 'WINCH', $old;
ok($t->wait_log(qr/stopping the workers, new binary $new serves/),
    'WINCH: the old master lets its workers go');

my @new_workers = $t->workers($new);
my %new_worker = map { $_ => 1 } @new_workers;
my %owners;

for my $k (1 .. 6) {
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

is(join("\n", $x->finish()), '', "all $n transfers complete, byte for byte");
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
ok($t->wait_log(
    qr/new binary \d+ exited with code 1, the old binary serves on/),
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

# a new binary whose configuration moves the SFTP listener: it keeps the
# FTP socket, closes the old SFTP one and binds the new; after WINCH the
# old master has no workers, and when the new binary exits (QUIT) it
# starts them again and gets its pid file back

unlink "$d/siftpd";
copy($t->binary(), "$d/siftpd") or die "copy: $!";
chmod 0755, "$d/siftpd";

my $sftp2 = port(8023);
(my $moved = $conf) =~ s/:$sftp;/:$sftp2;/ or die 'no sftp listen';
$t->write_file('siftpd.conf', $moved);

kill 'USR2', $new;
my $newer = $t->wait_new_master($new);
ok($newer, 'moved listener: the new master runs');
ok($t->wait_for(sub { scalar($t->workers($newer)) == 2 }, 30),
    'moved listener: its workers run');
like($t->read_file('error.log'),
    qr/ $newer#\d+: closed listening socket 127\.0\.0\.1:$sftp\n/,
    'moved listener: the inherited socket it does not name is closed');

kill 'WINCH', $new;
ok($t->wait_for(sub { !grep { $_ != $newer } $t->workers($new) }, 30),
    'WINCH: the old workers are gone');

my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$sftp2", Timeout => 10);
my $banner = $s ? <$s> // '' : '';
like($banner, qr/^SSH-2\.0-/, 'moved listener: the new address serves');
ok($s && $t->conn_owner($s, $t->workers($newer)),
    'moved listener: served by the new master\'s workers');
close $s if $s;

kill 'QUIT', $newer;
ok($t->wait_log(qr/starting workers again/, 30),
    'the new binary quit: the old master starts its workers again');
ok($t->wait_for(sub { scalar($t->workers($new)) == 2 }, 30),
    'the new binary quit: two workers again');
ok($t->wait_for(sub { !-e "$d/siftpd.pid.oldbin" }, 10)
    && $t->pidfile_pid() == $new, 'the new binary quit: pid file restored');
ok(served(), 'the new binary quit: the master serves');

# the new binary may be a single process: it gets the signals the old
# master had blocked when it started it, and stops on QUIT when idle

(my $single = $conf) =~ s/^worker_processes.*$/master_process off;/m
    or die 'no worker_processes';
$t->write_file('siftpd.conf', $single);

kill 'USR2', $new;
my $one = $t->wait_new_master($new);
ok($one, 'single process: started');
kill 'WINCH', $new;
ok($t->wait_for(sub { !grep { $_ != $one } $t->workers($new) }, 30),
    'single process: the old workers are gone');
ok(served(), 'single process: serves');
kill 'QUIT', $one;
ok($t->wait_log(qr/new binary $one exited with code 0/, 30),
    'single process: stops on QUIT');
ok($t->wait_for(sub { scalar($t->workers($new)) == 2 }, 30)
    && $t->pidfile_pid() == $new, 'single process: the old master is back');
$t->write_file('siftpd.conf', $conf);

$t->stop();
ok(!kill(0, $new), 'the new master stopped on QUIT');

alarm(0);
$t->done();
