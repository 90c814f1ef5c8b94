#!/usr/bin/perl

# deps.t -- auto/deps installs only what building and running needs, and
# with --test adds the tools the tests drive; debian/control's
# Build-Depends are its libraries; moto, which Debian does not package,
# goes into the venv the S3 tests look in; the README opens with its two
# commands, the second builds io_uring in, and .ci/run runs it exactly.

use warnings;
use strict;

use Test::More;

plan(tests => 12);

sub packages {
    my $out = `sh auto/deps --list @_`;
    is($? >> 8, 0, "auto/deps --list @_ exits 0");
    return { map { $_ => 1 } split /\n/, $out };
}

my $run = packages();
my $test = packages('--test');

# the Debian packages of the libraries ./configure probes (auto/lib's
# table) for the built-in modules, the core and --with-io_uring
open my $fh, '<', 'auto/lib' or die "auto/lib: $!";
my $lib = do { local $/; <$fh> };
close $fh;

my @needed;
for my $name (qw/OPENSSL LIBSSH ARGON2 SODIUM PCRE2 URING JANSSON/) {
    my ($pkg) = $lib =~ /^\s*$name\)\s*echo\s*"[^"]*\|([^|"]+)"/m
        or die "auto/lib names no package for $name";
    push @needed, $pkg;
}

is(join(' ', grep { !$run->{$_} } @needed, qw/gcc libc6-dev make/), '',
    'the run command installs the compiler, make and every probed library');

my @tools = qw/perl python3 python3-paramiko lftp sshpass openssh-client
    openssl chromium nodejs npm logrotate systemd groff-base dpkg-dev debhelper qemu-user
    gcc-aarch64-linux-gnu clang haproxy rclone python3-venv/;
is(join(' ', grep { $run->{$_} } @tools), '',
    'the run command installs no test tool');
is(join(' ', grep { !$test->{$_} } @tools, keys %$run), '',
    'the test command adds them to the run command\'s packages');

# the source package builds from the same libraries (the compiler and make
# come with build-essential, curl is for the README's first request)

open $fh, '<', 'debian/control' or die "debian/control: $!";
my $control = do { local $/; <$fh> };
close $fh;
my ($bd) = $control =~ /^Build-Depends:((?:.*\n)(?:[ \t].*\n)*)/m
    or die 'debian/control names no Build-Depends';
my @bd = sort map { s/\s*\(.*//r } grep { /\S/ }
    map { s/^\s+|\s+$//gr } split /,/, $bd;
is(join(' ', @bd), join(' ', sort 'debhelper-compat',
        grep { !/^(gcc|libc6-dev|make|curl)$/ } keys %$run),
    'debian/control builds from the libraries of auto/deps');

# moto's venv: where auto/deps makes it, the S3 tests find moto_server

open $fh, '<', 'auto/deps' or die "auto/deps: $!";
my $deps = do { local $/; <$fh> };
close $fh;
open $fh, '<', 't/lib/Test/Siftpd/S3.pm' or die "S3.pm: $!";
my $s3pm = do { local $/; <$fh> };
close $fh;

my ($cache) = $deps =~ /^KTLS_CACHE=(\S+)$/m;
my ($venv) = $deps =~ /^MOTO_VENV=\$KTLS_CACHE(\/\S+)$/m;
ok(defined $cache && defined $venv
    && index($s3pm, "'$cache$venv/bin'") >= 0
    && $deps =~ /pip" install -q 'moto\[server\]'/,
    'auto/deps installs moto into the venv whose bin the S3 tests search');

my $help = `sh auto/deps --help`;
like($help, qr/^\s+--test\s+.*test/m, '--help says what --test adds');

open $fh, '<', 'README.md' or die "README.md: $!";
my $readme = do { local $/; <$fh> };
close $fh;

my @cmds = $readme =~ /^    (auto\/deps\b.*)$/mg;
is(scalar @cmds, 2, 'the README has two commands');
like($cmds[1] // '', qr/^auto\/deps --test && /, 'the test one uses --test');
like($cmds[1] // '', qr/\.\/configure [^&]*--with-io_uring\b/,
    'the test one builds io_uring in, so the tests cover it');

open $fh, '<', '.ci/run' or die ".ci/run: $!";
my ($ci) = grep { /^auto\/deps/ } <$fh>;
close $fh;
chomp $ci if defined $ci;
is($ci, $cmds[1], '.ci/run runs the README\'s test command');
