#!/usr/bin/perl

# fuzz.t -- every libFuzzer target under fuzz/ builds with clang and runs
# a bounded number of inputs grown from its seed corpus without a crash,
# a sanitizer report or a broken invariant ("make fuzz-smoke": 100000
# inputs each, 2000 for the targets that write files for each input).

use warnings;
use strict;

use Test::More;

my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';

plan(skip_all => 'no clang (auto/deps --test installs it)')
    if system('clang --version >/dev/null 2>&1') != 0;
plan(skip_all => "no $objs/Makefile (run ./configure)")
    unless -f "$objs/Makefile";

# the targets are built with the sanitizers whatever the build under test:
# the sanitizer pass would only build and run the same targets again

open(my $mf, '<', "$objs/Makefile") or die "$objs/Makefile: $!";
plan(skip_all => 'the targets run in the pass without sanitizers')
    if (<$mf> // '') =~ /--with-sanitizers/;
close $mf;

my @targets = map { m{^fuzz/(\w+)\.c$} ? $1 : () } glob('fuzz/*.c');

plan(tests => 3 + @targets);

ok(@targets >= 8, 'fuzz/ holds the targets: ' . join(' ', @targets));

my $out = `make -s -f $objs/Makefile fuzz-smoke 2>&1`;
is($? >> 8, 0, 'make fuzz-smoke exits 0') or diag($out);

for my $t (@targets) {
    my @seeds = glob("fuzz/corpus/$t/*");
    ok(@seeds >= 3, "$t has a seed corpus");
}

my @done = $out =~ /^Done (\d+) runs/mg;
is(scalar @done, scalar @targets, 'each target ran to the end')
    or diag($out);
