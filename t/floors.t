#!/usr/bin/perl

# floors.t -- the kernel knows no protocol and no storage: no source in
# src/core or src/event includes a header of a higher floor (accounts,
# storage, transfers, the protocols).  An inversion that has to stay for a
# while is listed below with its reason, so that any other fails.

use warnings;
use strict;

use Test::More;

my @kernel = ('src/core', 'src/event');
my @higher = ('src/account', 'src/storage', 'src/xfer', 'src/ftp',
              'src/sftp', 'src/http');

# "file: header" => why it is still there (none today)
my %allowed = (
);

my %higher;
for my $dir (@higher) {
    for my $h (glob("$dir/*.h")) {
        (my $name = $h) =~ s{.*/}{};
        $higher{$name} = $dir;
    }
}

ok(scalar(keys %higher) >= 10, 'the higher floors have their headers')
    or diag(join(' ', sort keys %higher));

my (@found, %seen);

for my $dir (@kernel) {
    for my $file (sort glob("$dir/*.[ch]")) {
        open(my $fh, '<', $file) or die "$file: $!";
        while (my $line = <$fh>) {
            next unless $line =~ /^\s*#\s*include\s*[<"]([^>"]+)[>"]/;
            (my $name = $1) =~ s{.*/}{};
            next unless $higher{$name};
            my $key = "$file: $name";
            $seen{$key} = 1;
            push @found, "$key ($higher{$name})" unless $allowed{$key};
        }
        close($fh);
    }
}

is(join("\n", @found), '', 'no include from the kernel to a higher floor');

my @stale = grep { !$seen{$_} } sort keys %allowed;
is(join("\n", @stale), '', 'every listed exception still exists');

done_testing();
