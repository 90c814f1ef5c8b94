#!/usr/bin/perl

# install.t -- "make install DESTDIR=..." of the current build lays out a
# working prefix (binary, conf, html, modules, var/log, var/data owned by
# the configured workers' user, the systemd unit and the logrotate file
# with the prefix in them); "siftpd -t" accepts it at once and writes
# nothing; a second install keeps an edited configuration, the user store,
# logs and data; systemd-analyze verifies the unit where it is installed.

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

plan(tests => 18);

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

is(join('', map { slurp($_) // '' } glob("$d/sanitizer*")), '',
    'no sanitizer errors');
