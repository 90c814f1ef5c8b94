#!/usr/bin/perl

# logrotate.t -- the logrotate file "make install" writes, run by
# "logrotate -f" with its own state file against a siftpd started on the
# installed prefix: every line logged before and after the rotation is in
# the rotated or the new error log and transfer log, none is lost, and
# the lines after it are in the new files (the postrotate reopen worked).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_login ftp_cmd ftp_passive/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();
my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';

plan(skip_all => "no $objs/Makefile") unless -f "$objs/Makefile";
plan(skip_all => 'no logrotate (Debian package logrotate)')
    unless system('logrotate --version >/dev/null 2>&1') == 0;

plan(tests => 10);

# the installed prefix, the shipped configuration with free ports, one
# worker and logins in clear

my $p = "$d/siftp";
my ($rc, $out) = $t->make_install(PREFIX => $p);
is($rc, 0, 'make install PREFIX=...') or diag($out);

open my $fh, '<', "$p/conf/siftpd.conf" or die "siftpd.conf: $!";
my $conf = do { local $/; <$fh> };
close $fh;

my $ftp = port(8021);
my $pasv = port(8100);
$conf =~ s/^worker_processes\s+\S+;/worker_processes 1;/m or die;
$conf =~ s/127\.0\.0\.1:2121;/127.0.0.1:$ftp; tls_login optional;
        tls_data optional;/ or die;
$conf =~ s/\s*listen\s+127\.0\.0\.1:9990 ssl;// or die;
$conf =~ s/127\.0\.0\.1:2222;/127.0.0.1:${\ port(8022)};/ or die;
$conf =~ s/127\.0\.0\.1:8080;/127.0.0.1:${\ port(8080)};/ or die;
$conf =~ s/passive_ports\s+40000-40999;/passive_ports $pasv-${\ ($pasv + 9)};/
    or die;

open $fh, '>', "$p/conf/siftpd.conf" or die;
print $fh "daemon off;\n$conf";
close $fh;

# siftpd on the installed prefix and binary, in the foreground to stop
# it by its pid

$t->run('conf/siftpd.conf', prefix => $p, binary => "$p/sbin/siftpd",
    pid => 'var/siftpd.pid');
ok(-s "$p/var/siftpd.pid", 'siftpd started and wrote var/siftpd.pid');

# a user added after the first start, as an administrator would (the
# first start makes the user store and gives var/data to the workers)

open $fh, '|-', "$p/sbin/siftpd -p $p/ user add alice --home /alice"
    . ' --perms list,upload >/dev/null 2>&1' or die "user add: $!";
print $fh "secret\n";
close $fh or die 'user add alice failed';
mkdir "$p/var/data/alice" unless -d "$p/var/data/alice";

# a worker looks at the user store again at a login in a later second
my $added = time;
select(undef, undef, undef, 0.05) while time == $added;

# one upload each, in its own session: a line in the transfer log and
# one in the error log (the session log at info)

sub uploads {
    my ($tag) = @_;
    for my $i (1 .. 3) {
        my $s = ftp_login($ftp, 'alice', 'secret');
        ftp_passive($s, "STOR $tag-$i", "$tag $i\n");
        ftp_cmd($s, 'QUIT');
        close $s;
    }
}

uploads('before');

my $rot = `logrotate -f -s $d/logrotate.state $p/pkg/siftpd.logrotate 2>&1`;
is($? >> 8, 0, 'logrotate -f') or diag($rot);

# the reopen is a signal: the master and the worker each say "reopened"
# in the new error log once they write there

sub reopened {
    open my $fh, '<', "$p/var/log/error.log" or return 0;
    return scalar grep { /reopened "/ } <$fh>;
}

for (1 .. 400) {
    last if reopened() >= 2;
    select(undef, undef, undef, 0.05);
}
is(reopened(), 2, 'the master and the worker reopened their logs');
ok(-e "$p/var/log/error.log.1" && -e "$p/var/log/xferlog.1",
    'the logs were rotated');

uploads('after');

$t->stop();

sub names {
    my ($file) = @_;
    open my $fh, '<', "$p/var/log/$file" or return '';
    my %seen;
    while (<$fh>) {
        $seen{$1} = 1 if /\b((?:before|after)-\d)\b/;
    }
    return join ' ', sort keys %seen;
}

my $before = 'before-1 before-2 before-3';
my $after = 'after-1 after-2 after-3';

is(names('error.log.1'), $before, 'the uploads before, in error.log.1');
is(names('error.log'), $after, 'the uploads after, in the new error.log');
is(names('xferlog.1'), $before, 'the uploads before, in xferlog.1');
is(names('xferlog'), $after, 'the uploads after, in the new xferlog');

my $log = join '', map { $t->read_file($_) } 'stderr';
for my $f ("$p/var/log/error.log.1", "$p/var/log/error.log") {
    open(my $lfh, '<', $f) or next;
    $log .= join '', grep { /\[alert\]/ } <$lfh>;
}
opendir(my $dh, $d) or die "$d: $!";
$log .= join '', map { $t->read_file($_) } grep { /^sanitizer/ } readdir $dh;
closedir $dh;
is(join("\n", grep { /\[alert\]|runtime error:|Sanitizer/ } split /\n/, $log),
    '', 'no alerts, no sanitizer errors');
