#!/usr/bin/perl

# deb.t -- the Debian packages: dpkg-buildpackage builds siftpd and
# siftpd-mod-hello from a copy of the tree (the tree stays clean); the
# packages hold the binary, the systemd unit, the logrotate rules, the man
# pages, the configuration as a conffile naming the system user "siftpd"
# and including the module snippets, and the module with its snippet.
# Unpacked into a directory, their siftpd runs on a copy of the packaged
# configuration (its paths under that directory, its ports free ones,
# the module's snippet enabled as the module's postinst does): the first
# start prints the first user's password on stderr, which logs in over
# FTPS (curl) and SFTP (OpenSSH sftp through sshpass), and the module
# answers GET /hello.  systemd itself is not started here; systemd-analyze
# verifies the unit.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new();
my $d = $t->testdir();

plan(skip_all => 'no dpkg-buildpackage or dh (Debian packages dpkg-dev, '
    . 'debhelper; auto/deps --test)')
    unless system('dpkg-buildpackage --version >/dev/null 2>&1') == 0
    && system('command -v dh >/dev/null 2>&1') == 0;
plan(skip_all => 'not a git checkout')
    unless system('git rev-parse --git-dir >/dev/null 2>&1') == 0;

# the packages build from the source, whatever the build under test: the
# sanitizer pass would only build the same packages again

my $objs = $ENV{TEST_SIFTPD_OBJS} // 'objs';
my $configured = '';

if (open(my $mf, '<', "$objs/Makefile")) {
    $configured = <$mf> // '';
}

plan(skip_all => 'packages are built in the pass without sanitizers')
    if $configured =~ /--with-sanitizers/;

plan(tests => 20);

# the tree as git sees it, tracked and new files, without build output

mkdir "$d/src" or die;
system("git ls-files -z --cached --others --exclude-standard"
    . " | tar -c --null -T - -f - | tar -x -C $d/src") == 0
    or die 'copying the tree failed';

{
    local %ENV = %ENV;
    delete @ENV{qw/MAKEFLAGS MAKELEVEL MFLAGS/};
    $ENV{DEB_BUILD_OPTIONS} = 'nocheck noautodbgsym';
    system("cd $d/src && dpkg-buildpackage -us -uc -b -j2"
        . " > $d/build.log 2>&1");
}
is($? >> 8, 0, 'dpkg-buildpackage -us -uc -b')
    or diag(`tail -40 $d/build.log`);

my ($deb) = glob("$d/siftpd_*.deb");
my ($mod) = glob("$d/siftpd-mod-hello_*.deb");
ok(defined $deb && defined $mod, 'siftpd and siftpd-mod-hello are built')
    or BAIL_OUT('no packages');

my %files = map { m{ \./(\S+)$} ? ("/$1" => 1) : () }
    split /\n/, `dpkg-deb -c $deb`;
is(join(' ', grep { !$files{$_} } qw{/usr/sbin/siftpd
        /lib/systemd/system/siftpd.service /etc/logrotate.d/siftpd
        /etc/siftpd/siftpd.conf /etc/siftpd/modules-enabled/
        /usr/share/man/man8/siftpd.8.gz /usr/share/man/man5/siftpd.conf.5.gz
        /usr/share/siftpd/html/index.html /var/lib/siftpd/
        /var/log/siftpd/}),
    '', 'siftpd: binary, unit, logrotate rules, configuration, man pages');
is(join(' ', grep { m{^/(run|usr/pkg)/} } sort keys %files), '',
    'nothing in /run or /usr/pkg');

is(`dpkg-deb -I $deb conffiles`,
    "/etc/logrotate.d/siftpd\n/etc/siftpd/siftpd.conf\n",
    'the configuration and the logrotate rules are conffiles');
like(`dpkg-deb -f $mod Depends`, qr/^siftpd \(= [^)]+\)/,
    'the module needs the siftpd of its own build');

my %mfiles = map { m{ \./(\S+)$} ? ("/$1" => 1) : () }
    split /\n/, `dpkg-deb -c $mod`;
ok($mfiles{'/usr/lib/siftpd/modules/sft_hello_module.so'}
    && $mfiles{'/usr/share/siftpd/modules-available/mod-hello.conf'},
    'siftpd-mod-hello: the module and its snippet');

my $root = "$d/root";
system("dpkg-deb -x $deb $root && dpkg-deb -x $mod $root") == 0
    or die 'dpkg-deb -x failed';

sub slurp {
    open my $fh, '<', $_[0] or return '';
    local $/;
    return <$fh>;
}

my $conf = slurp("$root/etc/siftpd/siftpd.conf");
like($conf, qr/^user +siftpd siftpd;$/m, 'the workers run as "siftpd"');
like($conf, qr{^include +/etc/siftpd/modules-enabled/\*\.conf;$}m,
    'the configuration includes the module snippets');
is(slurp("$root/usr/share/siftpd/modules-available/mod-hello.conf"),
    "load_module /usr/lib/siftpd/modules/sft_hello_module.so;\n",
    'the snippet loads the module');

my $unit = slurp("$root/lib/systemd/system/siftpd.service");
ok($unit =~ m{^ExecStart=/usr/sbin/siftpd -p /usr/$}m
    && $unit =~ m{^PIDFile=/run/siftpd\.pid$}m
    && $unit =~ m{^ReadWritePaths=.*/etc/siftpd}m,
    'the unit runs /usr/sbin/siftpd and may write /etc/siftpd');

# systemd-analyze reads the unit with its paths under $root, where they
# exist; it only warns about a misspelt setting, so no output either

SKIP: {
    skip 'no systemd-analyze (Debian package systemd)', 1
        unless system('systemd-analyze --version >/dev/null 2>&1') == 0;

    (my $u = $unit) =~ s{(?<=[ ='])/(etc|var|usr)/}{$root/$1/}g;
    $t->write_file('siftpd.service', $u);
    is(`systemd-analyze verify $d/siftpd.service 2>&1`, '',
        'systemd-analyze verify accepts the unit, no warning');
}

my $postinst = `dpkg-deb -I $deb postinst`;
like($postinst, qr/adduser --system --group .*\n?.* siftpd$/m,
    'postinst creates the system user');
like($postinst, qr/deb-systemd-helper .*enable.*siftpd\.service/,
    'and enables the unit');

# the unpacked siftpd on the packaged configuration, moved under $root

my ($ftp, $ftps, $sftp, $http) = (port(8021), port(8990), port(8022),
    port(8080));
my $pasv = port(8100);

$conf =~ s/^pid .*$/pid $d\/siftpd.pid;/m or die;
$conf =~ s/^error_log .*$/error_log $d\/error.log info;/m or die;
$conf =~ s/^user .*$/user nobody nogroup;/m or die;
$conf =~ s{(?<=[ \t])/(etc|run|var|usr)/}{$root/$1/}g;
$conf =~ s/127\.0\.0\.1:2121;/127.0.0.1:$ftp;/ or die;
$conf =~ s/127\.0\.0\.1:9990 ssl;/127.0.0.1:$ftps ssl;/ or die;
$conf =~ s/127\.0\.0\.1:2222;/127.0.0.1:$sftp;/ or die;
$conf =~ s/127\.0\.0\.1:8080;/127.0.0.1:$http;/ or die;
$conf =~ s/passive_ports\s+\S+;/passive_ports $pasv-@{[$pasv + 49]};/ or die;
$t->write_file('siftpd.conf', "daemon off;\n$conf");

# what the module's postinst links, the module's path under $root
$t->write_file('root/etc/siftpd/modules-enabled/50-mod-hello.conf',
    "load_module $root/usr/lib/siftpd/modules/sft_hello_module.so;\n");
chown scalar getpwnam('nobody'), scalar getgrnam('nogroup'),
    "$root/var/lib/siftpd" if $> == 0;

$t->run('siftpd.conf', binary => "$root/usr/sbin/siftpd");

my ($pw) = $t->read_file('stderr')
    =~ /created the first user "admin" with the password (\S+)/;
ok(defined $pw, 'the first start printed the password on stderr')
    or diag($t->read_file('stderr') . $t->read_file('error.log'));
$pw //= 'none';

my $out = `timeout 30 curl -s -k --ssl-reqd ftp://admin:$pw\@127.0.0.1:$ftp/ 2>&1`;
is($? >> 8, 0, 'FTPS login with it') or diag($out);

SKIP: {
    skip 'no sshpass', 1 unless -x '/usr/bin/sshpass';

    $t->write_file('batch', "pwd\n");
    $out = `timeout 30 sshpass -p '$pw' sftp -o BatchMode=no -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o PubkeyAuthentication=no -P $sftp -b $d/batch admin\@127.0.0.1 2>&1`;
    like($out, qr{Remote working directory: /}, 'SFTP login with it');
}

like(http_get($http, '/hello') // '', qr/hello, world/,
    'the module of siftpd-mod-hello answers');

$t->done();
