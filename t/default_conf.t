#!/usr/bin/perl

# default_conf.t -- the shipped conf/siftpd.conf, as the README's run
# command starts it (only its ports moved to free ones): the first start
# creates the users file with "admin" and prints the password once, a
# self-signed certificate and an SSH host key; lftp mirrors a tree with
# spaces and UTF-8 in its names up and down over explicit FTPS (login and
# data must be TLS there), byte for byte; OpenSSH sftp logs in with the
# same password; the dashboard and /api/v1/stats answer; the transfers
# are in var/log/xferlog.  Started as root, the workers run as "nobody",
# var/data is made theirs, and a user added while running logs in and
# uploads without a reload.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Find;
use File::Path qw/make_path/;
use Digest::SHA;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp http/);
my $d = $t->testdir();

plan(skip_all => 'no lftp') unless system('lftp --version >/dev/null') == 0;

(my $src = $0) =~ s{/t/[^/]+$}{};
$src = '.' if $src eq $0;
open my $fh, '<', "$src/conf/siftpd.conf" or die "conf/siftpd.conf: $!";
my $conf = do { local $/; <$fh> };
close $fh;

# the same file, with free ports and the pid file where the test harness
# looks for it; everything else as shipped

my ($ftp, $ftps, $sftp, $http) = (port(8021), port(8990), port(8022),
    port(8080));
my $pasv = port(8100);
$conf =~ s/127\.0\.0\.1:2121;/127.0.0.1:$ftp;/ or die;
$conf =~ s/127\.0\.0\.1:9990 ssl;/127.0.0.1:$ftps ssl;/ or die;
$conf =~ s/127\.0\.0\.1:2222;/127.0.0.1:$sftp;/ or die;
$conf =~ s/127\.0\.0\.1:8080;/127.0.0.1:$http;/ or die;
$conf =~ s/passive_ports\s+40000-40999;/"passive_ports " . $pasv . "-"
    . ($pasv + 49) . ";"/e or die;
$conf =~ s/^pid\s+var\/siftpd\.pid;/pid siftpd.pid;/m or die;

mkdir "$d/conf";
mkdir "$d/var";
mkdir "$d/var/log";
symlink(`cd $src/html && pwd` =~ s/\n//r, "$d/html") or die;
$t->write_file('conf/siftpd.conf', "daemon off;\n" . $conf);

# "siftpd -t" checks the configuration; it makes no users file,
# certificate or host key

my $tout = `$^X -e 'exec \@ARGV' -- ${\ $t->binary()} -p $d/ -c $d/conf/siftpd.conf -t 2>&1`;
is($? >> 8, 0, 'siftpd -t accepts the shipped configuration') or diag($tout);
ok(!-e "$d/conf/users" && !-e "$d/var/tls" && !-e "$d/var/ssh",
    '-t made no users file, certificate or host key');

$t->run('conf/siftpd.conf');

my ($pw) = $t->read_file('stderr')
    =~ /created the first user "admin" with the password (\S+)/;
ok(defined $pw, 'the first start printed admin\'s password');
ok(-s "$d/var/tls/cert.pem" && -s "$d/var/ssh/host_ed25519_key",
    'a certificate and a host key were made');
$pw //= 'none';

SKIP: {
    skip 'not started as root', 3 unless $> == 0;

    # a worker switches right after the fork: wait for it to be done;
    # "user nobody nogroup": uid and gid
    my $nobody = getpwnam('nobody');
    my $want = "$nobody " . getgrnam('nogroup');
    my @ids;
    my $all_nobody = sub {
        @ids = map {
            my $status = '';
            if (open my $fh, '<', "/proc/$_/status") {
                $status = do { local $/; <$fh> };
            }
            $status =~ /^Uid:\s+(\d+).*^Gid:\s+(\d+)/ms ? "$1 $2" : 'none';
        } $t->workers();
        return @ids && !grep { $_ ne $want } @ids;
    };
    ok($t->wait_for($all_nobody, 10), 'the workers run as nobody:nogroup')
        or diag("worker uid gid: @ids");
    is((stat "$d/var/data")[4], $nobody, 'var/data belongs to them');
    is((stat "$d/conf/users")[4], $nobody, 'and so does conf/users');
}

# the tree

my $tree = "$d/src";
my @names = ('plain', 'with space', "caf\x{e9}", "\x{65e5}\x{672c}");
srand(7);
for my $i (0 .. 59) {
    my $path = "$tree/" . $names[$i % 4] . " dir/" . $names[($i + 1) % 4]
        . " $i.bin";
    utf8::encode($path);
    (my $parent = $path) =~ s{/[^/]*$}{};
    make_path($parent);
    open my $f, '>', $path or die;
    print $f join('', map { chr(int(rand(256))) } 1 .. int(rand(50000)));
    close $f;
}

sub digests {
    my ($root) = @_;
    my %h;
    find({ no_chdir => 1, wanted => sub {
        return unless -f $_;
        (my $rel = $_) =~ s{^\Q$root\E/}{};
        $h{$rel} = Digest::SHA->new(256)->addfile($_)->hexdigest;
    } }, $root);
    return join "\n", map { "$_ $h{$_}" } sort keys %h;
}

sub lftp {
    my ($cmds) = @_;
    my $script = "set ftp:ssl-force yes; set ftp:ssl-protect-data yes; "
        . "set ssl:verify-certificate no; set net:max-retries 1; "
        . "set net:timeout 20; set ftp:charset utf-8; "
        . "set file:charset utf-8; set cmd:fail-exit yes; $cmds; quit";
    local $ENV{LC_ALL} = 'C.UTF-8';
    local $ENV{HOME} = $d;
    return system('timeout', '120', 'lftp', '-u', "admin,$pw", '-e',
        $script, "ftp://127.0.0.1:$ftp") >> 8;
}

is(lftp("mirror -R --parallel=4 '$tree' up"), 0, 'lftp mirror up over FTPS');
is(digests("$d/var/data/up"), digests($tree), 'the tree arrived intact');
is(lftp("mirror --parallel=4 up '$d/back'"), 0, 'lftp mirror down');
is(digests("$d/back"), digests($tree), 'and came back intact');

# plaintext is refused on this configuration

my $plain = system('timeout', '30', 'curl', '-s', '-o', '/dev/null',
    "ftp://admin:$pw\@127.0.0.1:$ftp/") >> 8;
isnt($plain, 0, 'a plaintext login is refused');

SKIP: {
    skip 'no sshpass', 1 unless -x '/usr/bin/sshpass';

    $t->write_file('batch', "ls up\n");
    my $out = `timeout 30 sshpass -p '$pw' sftp -o BatchMode=no -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o PubkeyAuthentication=no -P $sftp -b $d/batch admin\@127.0.0.1 2>&1`;
    like($out, qr/plain dir/, 'sftp with the same password');
}

# a user added while running logs in and uploads: the workers re-read the
# users file "siftpd user add" wrote

open my $add, '|-', $t->binary(), '-p', "$d/", '-c', "$d/conf/siftpd.conf",
    'user', 'add', 'bob', '--home', '/', '--perms', 'list,download,upload'
    or die;
print $add "bob-pw\n";
close $add;
is($? >> 8, 0, 'user add bob while running');

$t->write_file('bob.txt', "from bob\n");
my $up = system('timeout', '30', 'curl', '-s', '-k', '--ssl-reqd', '-T',
    "$d/bob.txt", "ftp://bob:bob-pw\@127.0.0.1:$ftp/bob.txt") >> 8;
is($up, 0, 'bob logs in and uploads, no reload');
is($t->read_file('var/data/bob.txt'), "from bob\n", 'bob\'s file arrived');

like(http_get($http, '/') // '', qr/<title>siftpd<\/title>/, 'the dashboard');
like(http_get($http, '/api/v1/stats') // '', qr/"logins":\{"ok":\d+/,
    'the stats');

my @x = grep { / ftp 0 \* c$/ } split /\n/, $t->read_file('var/log/xferlog');
is(scalar @x, 121, 'var/log/xferlog has every transfer');

# log rotation: the master reopens the moved logs and gives them to the
# workers' user, so the workers' own reopen that follows succeeds (each
# process logs 'reopened "..."' in the new error log when it did)

SKIP: {
    skip 'not started as root', 2 unless $> == 0;

    my $n = 1 + $t->workers();
    rename "$d/var/log/error.log", "$d/var/log/error.log.1" or die;
    rename "$d/var/log/xferlog", "$d/var/log/xferlog.1" or die;
    kill 'USR1', $t->pid();
    my @done;
    ok($t->wait_for(sub {
        @done = $t->read_file('var/log/error.log') =~ /reopened "/g;
        @done == $n;
    }, 10), 'master and workers reopened the logs')
        or diag($t->read_file('var/log/error.log.1'));
    is((stat "$d/var/log/xferlog")[4], getpwnam('nobody'),
        'the new transfer log belongs to the workers\' user');
}

$t->stop();

# the error log of this configuration is var/log/error.log
$t->write_file('error.log', $t->read_file('var/log/error.log'));

$t->done();
