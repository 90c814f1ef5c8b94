#!/usr/bin/perl

# docs.t -- the documentation stands on its own: every Markdown file that
# docs/*.md and README.md name (a notes file, another page) is one of the
# repository's, named by its path in the repository.

use warnings;
use strict;

use Test::More;

my @pages = ('README.md', glob('docs/*.md'));

plan(tests => scalar @pages);

for my $page (@pages) {
    open(my $fh, '<', $page) or die "$page: $!";
    my $text = do { local $/; <$fh> };
    close($fh);

    my @missing = grep { m{^/} || !-f $_ }
                  $text =~ m{([A-Za-z0-9_./-]+\.md)\b}g;

    ok(!@missing, "$page names only the repository's pages")
        or diag("not in the repository: @missing");
}
