#!/usr/bin/perl

# sftp.t -- the SFTP module with OpenSSH's sftp and ssh: public-key and
# password logins and refusals, directory operations, a path escape, a
# read-only user, shell/exec refused, 5 and 20 MiB transfers compared byte
# for byte, four clients at once, a reload in the middle of a download,
# and a graceful stop that does not wait for an idle session.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Time::HiRes qw/sleep time/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client')
    unless system('sftp -h 2>/dev/null; ssh-keygen -? 2>/dev/null') != -1
        && -x '/usr/bin/sftp';

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/ro";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 20s;
    }
}
EOF2

for (['alice', '/alice',
      'list,download,upload,overwrite,delete,rename,mkdir,rmdir'],
     ['ro', '/ro', 'list,download'])
{
    my ($u, $home, $perms) = @$_;
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $u, '--home', $home, '--perms', $perms or die;
    print $fh "pw-$u\n";
    close $fh;
}

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
system("ssh-keygen -q -t ed25519 -N '' -f $d/other") == 0 or die;
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('users');
$users =~ s/^\[(alice|ro)\]\n/[$1]\nssh_key = $pub\n/mg;
$t->write_file('users', $users);

$t->run();
my $port = port(8022);
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

ok(-f "$d/ssh/host_ed25519_key", 'host key created');
is((stat "$d/ssh/host_ed25519_key")[2] & 07777, 0600, 'host key mode');

my @opts = ('-o', 'StrictHostKeyChecking=no', '-o',
    'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o',
    'ConnectTimeout=10');

sub sftp {
    my ($user, $key, $batch) = @_;
    $t->write_file('batch', $batch);
    my $cmd = "timeout 20 sftp -b $d/batch -P $port @opts -i $d/$key"
        . " $user\@127.0.0.1 2>&1";
    my $out = `$cmd`;
    return ($? >> 8, $out);
}

my ($rc, $out) = sftp('alice', 'key', "pwd\n");
is($rc, 0, 'key login') or diag($out);
like($out, qr{Remote working directory: /$}m, 'home is /');

($rc, $out) = sftp('alice', 'other', "pwd\n");
isnt($rc, 0, 'unknown key refused');

$t->write_file('small', "hello sftp\n" x 1000);

($rc, $out) = sftp('alice', 'key', <<"EOF2");
mkdir d1
put $d/small d1/f
rename d1/f d1/g
ls d1
EOF2
is($rc, 0, 'mkdir, put, rename, ls') or diag($out);
like($out, qr{d1/g}, 'listing shows the renamed file');

($rc, $out) = sftp('alice', 'key', "get d1/g $d/small.back\n");
is($rc, 0, 'get') or diag($out);
is($t->read_file('small.back'), $t->read_file('small'), 'get identical');
ok(-f "$d/data/alice/d1/g", 'file stored under the home');

($rc, $out) = sftp('alice', 'key', "rm d1/g\nrmdir d1\n");
is($rc, 0, 'rm, rmdir') or diag($out);
ok(!-e "$d/data/alice/d1", 'directory gone');

($rc, $out) = sftp('alice', 'key', "get ../../../../etc/passwd $d/pw\n");
isnt($rc, 0, 'path escape refused');
ok(!-e "$d/pw", 'nothing fetched');

($rc, $out) = sftp('ro', 'key', "put $d/small x\n");
isnt($rc, 0, 'read-only user cannot put');
like($out, qr/Permission denied/i, 'permission denied');
ok(!-e "$d/data/ro/x", 'nothing stored');

($rc, $out) = sftp('ro', 'key', "mkdir d\n");
isnt($rc, 0, 'read-only user cannot mkdir');
like($out, qr/Permission denied/i, 'mkdir: permission denied');
ok(!-e "$d/data/ro/d", 'no directory made');
like($t->read_file('error.log'),
    qr/permission denied: mkdir in a read-only session.*client: 127\.0\.0\.1.*ro/,
    'a change refused before the storage on a read-only session, logged');

my $sh = system("timeout 20 ssh -p $port @opts -i $d/key alice\@127.0.0.1 true"
    . " >/dev/null 2>&1");
isnt($sh, 0, 'exec refused');

# passwords, through sshpass: -o BatchMode=no comes before sftp's own

SKIP: {
    skip 'no sshpass', 6 unless -x '/usr/bin/sshpass';

    my @pw = ('-o', 'BatchMode=no', '-o', 'PubkeyAuthentication=no',
        '-o', 'PreferredAuthentications=password',
        '-o', 'NumberOfPasswordPrompts=1', @opts);

    $t->write_file('batch', "pwd\n");

    my $cmd = "timeout 20 sshpass -p %s sftp @pw -b $d/batch -P $port"
        . " alice\@127.0.0.1 2>&1";

    $out = `@{[ sprintf($cmd, 'pw-alice') ]}`;
    is($? >> 8, 0, 'password login') or diag($out);
    like($out, qr{Remote working directory: /$}m, 'password session works');

    # the second login is answered by the verification cache, at once
    $out = `@{[ sprintf($cmd, 'pw-alice') ]}`;
    is($? >> 8, 0, 'password login from the cache') or diag($out);
    like($t->read_file('error.log'), qr/sftp login \(password, cached\)/,
        'the cache answered it');

    $out = `@{[ sprintf($cmd, 'wrong') ]}`;
    isnt($? >> 8, 0, 'wrong password refused');
    unlike($out, qr/Remote working directory/, 'no session');
}

# big files: 5 MiB up and down, 20 MiB down, compared byte for byte

sub same {
    my ($a, $b) = @_;
    return system('cmp', '-s', $a, $b) == 0;
}

system("head -c 5242880 /dev/urandom > $d/big5") == 0 or die;
system("head -c 20971520 /dev/urandom > $d/data/alice/big20") == 0 or die;

my $start = time();
($rc, $out) = sftp('alice', 'key', "put $d/big5 big5\n");
is($rc, 0, 'put 5 MiB') or diag($out);
ok(same("$d/big5", "$d/data/alice/big5"), 'put 5 MiB identical');

($rc, $out) = sftp('alice', 'key', "get big5 $d/big5.back\n");
is($rc, 0, 'get 5 MiB') or diag($out);
ok(same("$d/big5", "$d/big5.back"), 'get 5 MiB identical');

($rc, $out) = sftp('alice', 'key', "get big20 $d/big20.back\n");
is($rc, 0, 'get 20 MiB') or diag($out);
ok(same("$d/data/alice/big20", "$d/big20.back"), 'get 20 MiB identical');
note(sprintf('5 MiB up, 5 MiB and 20 MiB down: %.2f s', time() - $start));

# four clients at once on two workers, two in each direction

unlink "$d/big5.back", "$d/big20.back";

my @kids;

for my $i (1 .. 4) {
    my $cmd = $i % 2 ? "get big20 $d/par$i\n" : "put $d/big5 par$i\n";
    $t->write_file("batch$i", $cmd);

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        exec("timeout 60 sftp -b $d/batch$i -P $port @opts -i $d/key"
            . " alice\@127.0.0.1 >$d/par$i.out 2>&1");
        exit 127;
    }

    push @kids, $pid;
}

for my $i (1 .. 4) {
    waitpid($kids[$i - 1], 0);
    is($? >> 8, 0, "parallel client $i") or diag($t->read_file("par$i.out"));
}

for my $i (1 .. 4) {
    ok($i % 2 ? same("$d/data/alice/big20", "$d/par$i")
              : same("$d/big5", "$d/data/alice/par$i"),
       "parallel transfer $i identical");
    unlink "$d/par$i", "$d/data/alice/par$i";
}

# a reload while a download runs: the old worker finishes it, then exits

my @old = $t->workers();

$t->write_file('batch', "get big20 $d/reload.back\n");

my $pid = fork();
die "fork: $!" unless defined $pid;

if ($pid == 0) {
    # 40 Mbit/s: about 4 s for 20 MiB
    exec("timeout 60 sftp -l 40000 -b $d/batch -P $port @opts -i $d/key"
        . " alice\@127.0.0.1 >$d/reload.out 2>&1");
    exit 127;
}

$t->wait_for(sub { -s "$d/reload.back" }, 10);
sleep 0.5;
$t->reload();

ok($t->wait_for(sub {
        my %w = map { $_ => 1 } $t->workers();
        (grep { !$w{$_} } @old) || scalar(keys %w) > 2
    }, 10), 'new workers after reload');

waitpid($pid, 0);
is($? >> 8, 0, 'download across a reload') or diag($t->read_file('reload.out'));
ok(same("$d/data/alice/big20", "$d/reload.back"),
   'download across a reload identical');

ok($t->wait_for(sub {
        my %w = map { $_ => 1 } $t->workers();
        !grep { $w{$_} } @old
    }, 10), 'old workers gone after the download');

($rc, $out) = sftp('alice', 'key', "pwd\n");
is($rc, 0, 'login after reload') or diag($out);

# a graceful stop closes a session that waits for a command

$pid = open(my $idle, '|-', "timeout 60 sftp -P $port @opts -i $d/key"
    . " alice\@127.0.0.1 >$d/idle.out 2>&1");
die "sftp: $!" unless $pid;

$t->wait_for(sub { $t->read_file('error.log') =~ /sftp subsystem started/
    && `ss -Htn state established '( sport = :$port )'` =~ /\S/ }, 10);
sleep 0.5;

# stop() sends QUIT and only after 20 s TERM; a server that waited for
# the idle session would need the TERM (no worker_shutdown_timeout here)
$start = time();
$t->stop();
my $took = time() - $start;
ok($took < 15, 'graceful stop does not wait for an idle session')
    or diag("stop took $took s");
close $idle;

$t->done();
