#!/usr/bin/perl

# uring.t -- "io_uring on;" in events{}: built with --with-io_uring, every
# worker (and not the master) holds one ring and logs it once, and the
# workers a reload starts have rings of their own; off, the default, opens
# none; a build without io_uring runs on with one notice per worker; the
# directive takes only on or off.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $built = `@{[ $t->binary() ]} -V 2>&1` =~ /--with-io_uring\b/;

my $user = $> == 0 ? "user nobody nogroup;\n" : '';

# how many io_uring instances a process holds
sub rings {
    my ($pid) = @_;
    opendir my $dh, "/proc/$pid/fd" or return -1;
    my $n = grep { (readlink("/proc/$pid/fd/$_") // '') =~ /io_uring/ }
        readdir $dh;
    closedir $dh;
    return $n;
}

sub conf {
    my ($uring) = @_;
    return <<"EOF";
%%TEST_GLOBALS%%
${user}worker_processes 2;
events { worker_connections 16; $uring }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF
}

sub count {
    my ($re) = @_;
    my @lines = $t->read_file('error.log') =~ /$re/g;
    return scalar @lines;
}

my $want = $built ? 1 : 0;
my $line = $built ? qr/io_uring: a ring of 256 entries/
    : qr/"io_uring on" is ignored: siftpd was built without --with-io_uring/;

$t->write_file_expand('siftpd.conf', conf('io_uring on;'));
$t->run();

ok($t->wait_for(sub { $t->workers() == 2
        && !grep { rings($_) != $want } $t->workers() }),
    "io_uring on: each worker holds $want ring(s)")
    or diag(join ', ', map { "$_: " . rings($_) } $t->workers());
is(rings($t->pid()), 0, 'the master holds none');
ok($t->wait_for(sub { count($line) == 2 }), 'one line per worker says so')
    or diag($t->read_file('error.log'));

# a reload: new workers, new rings

my %old = map { $_ => 1 } $t->workers();
$t->reload();

ok($t->wait_for(sub { my @w = $t->workers();
        @w == 2 && !grep { $old{$_} || rings($_) != $want } @w }, 20),
    'the workers of a reload hold rings of their own')
    or diag(join ', ', map { "$_: " . rings($_) } $t->workers());
ok($t->wait_for(sub { count($line) == 4 }), 'and say so once each');

$t->stop();

# off, the default

my $o = Test::Siftpd->new();
$o->write_file_expand('siftpd.conf', conf(''));
$o->run();

ok($o->wait_for(sub { $o->workers() == 2 }), 'io_uring off: two workers');
is(join(' ', map { rings($_) } $o->workers()), '0 0', 'they hold no ring');
unlike($o->read_file('error.log'), qr/io_uring/, 'and say nothing of it');

$o->stop();

# only on or off

$t->write_file_expand('bad.conf', conf('io_uring maybe;'));
my ($rc, $out) = $t->siftpd('-t', '-c', "$d/bad.conf");
isnt($rc, 0, '"io_uring maybe" fails the test of the configuration');
like($out, qr/io_uring.*must be "on" or "off"/, 'and says what it takes')
    or diag($out);

done_testing();
