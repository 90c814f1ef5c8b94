#!/usr/bin/perl

# install.t -- "make install DESTDIR=..." of the current build lays out a
# working prefix (binary, conf, html, modules, var/log, var/data owned by
# the configured workers' user, the systemd unit and the logrotate file
# with the prefix in them); "siftpd -t" accepts it at once and writes
# nothing; a second install keeps an edited configuration, the user store,
# logs and data; systemd-analyze verifies the unit where it is installed.
# configure's path options (a system layout: /usr, /etc, /run, /var/log,
# /var/lib) are compiled in and "make install DESTDIR=..." puts each part
# where it is named, the configuration naming them; siftpd -V prints the
# paths of the build.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Path qw/make_path/;
use Test::Siftpd;

my $t = Test::Siftpd->new();
my $d = $t->testdir();
my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';

plan(skip_all => "no $objs/Makefile") unless -f "$objs/Makefile";

open my $fh, '<', "$objs/Makefile" or die "$objs/Makefile: $!";
my ($prefix) = map { /^PREFIX = (\S+)/ ? $1 : () } <$fh>;
close $fh;
die "no PREFIX in $objs/Makefile" unless defined $prefix;

plan(tests => 26);

my $dest = "$d/dest";
my $p = "$dest$prefix";

sub install {
    my ($rc, $out) = $t->make_install(DESTDIR => $dest);
    is($rc, 0, 'make install DESTDIR=...') or diag($out);
}

sub slurp {
    open my $fh, '<', $_[0] or return undef;
    local $/;
    return <$fh>;
}

install();

ok(-x "$p/sbin/siftpd", 'sbin/siftpd');
ok(-f "$p/conf/siftpd.conf", 'conf/siftpd.conf');
ok(-f "$p/html/index.html", 'html/');
ok(-d "$p/var/log" && -d "$p/var/data", 'var/log and var/data');

opendir my $dh, "$objs/modules";
my @sos = $dh ? grep { /\.so$/ } readdir $dh : ();
closedir $dh if $dh;
is(join(' ', grep { !-f "$p/modules/$_" } @sos), '',
    'the dynamic modules in modules/');

my $unit = slurp("$p/pkg/siftpd.service") // '';
my $rot = slurp("$p/pkg/siftpd.logrotate") // '';
like($unit, qr{^PIDFile=\Q$prefix\E/var/siftpd\.pid$}m,
    'the unit names the pid file under the prefix');
like($rot, qr{\Q$prefix\E/sbin/siftpd -p \Q$prefix\E/ -s reopen},
    'the logrotate file reopens the logs of this prefix');
ok($unit ne '' && $rot ne '' && "$unit$rot" !~ /\@PREFIX\@/,
    'no placeholder is left');

# -t on the installed prefix, as installed

$t->sanitizer_env();
my $out = `$p/sbin/siftpd -p $p/ -c $p/conf/siftpd.conf -t 2>&1`;
is($? >> 8, 0, 'siftpd -t accepts the installed prefix') or diag($out);
ok(!-e "$p/conf/users", '-t wrote no user store');

# a second install over an edited configuration and a user store

open $fh, '>>', "$p/conf/siftpd.conf" or die;
print $fh "# edited by the administrator\n";
close $fh;
open $fh, '|-', "$p/sbin/siftpd -p $p/ -c $p/conf/siftpd.conf user add alice"
    . ' >/dev/null 2>&1' or die "user add: $!";
print $fh "secret\n";
close $fh or die 'user add alice failed';
for my $f ("$p/var/data/kept", "$p/var/log/error.log") {
    open $fh, '>', $f or die "$f: $!";
    print $fh "kept\n";
    close $fh;
}

my @kept = ("$p/conf/users", "$p/var/data/kept", "$p/var/log/error.log");
my $before = join('', map { slurp($_) // "$_ gone\n" } @kept);

install();

like(slurp("$p/conf/siftpd.conf"), qr/^# edited by the administrator$/m,
    'the edited configuration is kept');
is(join('', map { slurp($_) // "$_ gone\n" } @kept), $before,
    'the user store, data and logs are kept');

$out = `$p/sbin/siftpd -p $p/ -c $p/conf/siftpd.conf -t 2>&1`;
is($? >> 8, 0, 'siftpd -t still accepts it') or diag($out);

# a configuration already there names the workers' user: as root, the
# new var/data is theirs

SKIP: {
    skip 'not root', 1 if $> != 0;
    my @nobody = getpwnam('nobody') or skip 'no user nobody', 1;

    my $other = "$d/other";
    make_path("$other$prefix/conf");
    open $fh, '>', "$other$prefix/conf/siftpd.conf" or die;
    print $fh "user  nobody;\n";
    close $fh;

    my ($rc, $v) = $t->make_install(DESTDIR => $other);
    is(join(' ', $rc, (stat "$other$prefix/var/data")[4] // 'none'),
        "0 $nobody[2]", 'var/data belongs to the configured user')
        or diag($v);
}

# the unit as systemd reads it, installed where its paths are real:
# systemd-analyze only warns about a misspelt setting, so no output either

SKIP: {
    skip 'no systemd-analyze (Debian package systemd)', 1
        unless system('systemd-analyze --version >/dev/null 2>&1') == 0;

    my $real = "$d/real";
    my ($rc, $v) = $t->make_install(PREFIX => $real);
    $v .= "make install exited $rc\n" if $rc;
    $v .= `systemd-analyze verify $real/pkg/siftpd.service 2>&1`;
    is($v, '', 'systemd-analyze verify accepts the unit, no warning');
}

# the paths of this build, as siftpd -V prints them

open $fh, '<', "$objs/Makefile" or die "$objs/Makefile: $!";
my %mk = map { /^([A-Z_]+_PATH) = (\S+)$/ ? ($1 => $2) : () } <$fh>;
close $fh;

my $paths = "paths: prefix $prefix/, sbin $mk{SBIN_PATH}, conf $mk{CONF_PATH},"
    . " pid $mk{PID_PATH}, error log $mk{ERROR_LOG_PATH}, data $mk{DATA_PATH},"
    . " modules $mk{MODULES_PATH}, html $mk{HTML_PATH}, man $mk{MAN_PATH}";
like(`$objs/siftpd -V 2>&1`, qr/^\Q$paths\E$/m,
    'siftpd -V prints the paths of the build');

# a system layout: configure compiles the paths in; make install, with
# those paths, puts each part where it is named

my %fhs = (PREFIX => '/usr', CONF_PATH => '/etc/siftpd/siftpd.conf',
    PID_PATH => '/run/siftpd.pid',
    ERROR_LOG_PATH => '/var/log/siftpd/error.log',
    DATA_PATH => '/var/lib/siftpd');

$out = `./configure --prefix=/usr --conf-path=$fhs{CONF_PATH} \\
    --pid-path=$fhs{PID_PATH} --error-log-path=$fhs{ERROR_LOG_PATH} \\
    --data-path=$fhs{DATA_PATH} --builddir=$d/objs-fhs 2>&1`;
is($? >> 8, 0, 'configure with system paths') or diag($out);

my $h = slurp("$d/objs-fhs/sft_auto_config.h") // '';
is(join(' ', map { $h =~ /^#define SFT_$_  "\Q$fhs{$_}\E"$/m ? () : $_ }
        qw/CONF_PATH PID_PATH ERROR_LOG_PATH DATA_PATH/),
    '', 'the paths are compiled in');

open $fh, '<', "$d/objs-fhs/Makefile" or die "objs-fhs/Makefile: $!";
my %fmk = map { /^(PREFIX|[A-Z_]+_PATH) = (\S+)$/ ? ($1 => $2) : () } <$fh>;
close $fh;

my $f = "$d/fhs";
my ($frc, $fout) = $t->make_install(DESTDIR => $f, %fmk);
is($frc, 0, 'make install DESTDIR=... of the system layout') or diag($fout);

is(join(' ', grep { !-e "$f$_" } '/usr/sbin/siftpd',
        '/etc/siftpd/siftpd.conf', '/var/lib/siftpd/', '/var/log/siftpd/',
        '/run/', '/usr/share/man/man8/siftpd.8',
        '/usr/share/man/man5/siftpd.conf.5', '/usr/html/index.html',
        map({ "/usr/modules/$_" } @sos)),
    '', 'each part lands where it is named');

my $fconf = slurp("$f/etc/siftpd/siftpd.conf") // '';
is(join(' ', grep { $fconf !~ $_ }
        qr{^pid +/run/siftpd\.pid;$}m,
        qr{^error_log +/var/log/siftpd/error\.log info;$}m,
        qr{^transfer_log +/var/log/siftpd/xferlog;$}m,
        qr{^users +/etc/siftpd/users;$}m,
        qr{^ +root +/var/lib/siftpd;$}m,
        qr{^ +ssl_certificate +/etc/siftpd/tls/cert\.pem;$}m,
        qr{^ +host_key +/etc/siftpd/ssh/host_ed25519_key;$}m),
    '', 'the installed configuration names the system paths');

my $funit = slurp("$f/usr/pkg/siftpd.service") // '';
my $frot = slurp("$f/usr/pkg/siftpd.logrotate") // '';
ok($funit =~ m{^PIDFile=/run/siftpd\.pid$}m
    && $funit =~ m{^ExecStart=/usr/sbin/siftpd -p /usr/$}m
    && $funit =~ m{^ReadWritePaths=.*/var/lib/siftpd}m
    && $frot =~ m{^/var/log/siftpd/\*\.log /var/log/siftpd/xferlog \{$}m
    && $frot =~ m{\[ ! -s /run/siftpd\.pid \] \|\| /usr/sbin/siftpd -p /usr/ }m,
    'the unit and the logrotate rules name the system paths')
    or diag("$funit$frot");

# -t on the installed configuration, its system paths taken under DESTDIR

(my $tconf = $fconf) =~ s{(?<=[ \t])(/(?:etc|run|var|usr)/)}{$f$1}g;
open $fh, '>', "$d/fhs.conf" or die;
print $fh $tconf;
close $fh;
$out = `$f/usr/sbin/siftpd -p $f/usr/ -c $d/fhs.conf -t 2>&1`;
is($? >> 8, 0, 'siftpd -t accepts the installed system layout') or diag($out);

is(join('', map { slurp($_) // '' } glob("$d/sanitizer*")), '',
    'no sanitizer errors');
