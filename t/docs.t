#!/usr/bin/perl

# docs.t -- the documentation stands on its own: every Markdown file that
# docs/*.md and README.md name (a notes file, another page) is one of the
# repository's, named by its path in the repository.  Every directive of
# every module, the dynamic ones built included, has its syntax and
# description in its command table entry; docs/directives.md and the man
# pages are what "make docs" makes of the modules built in now, and groff
# renders the man pages without a warning.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd;

my @pages = ('README.md', glob('docs/*.md'));

plan(tests => scalar(@pages) + 9);

for my $page (@pages) {
    open(my $fh, '<', $page) or die "$page: $!";
    my $text = do { local $/; <$fh> };
    close($fh);

    my @missing = grep { m{^/} || !-f $_ }
                  $text =~ m{([A-Za-z0-9_./-]+\.md)\b}g;

    ok(!@missing, "$page names only the repository's pages")
        or diag("not in the repository: @missing");
}

my $t = Test::Siftpd->new();
my $d = $t->testdir();
my $objs = $ENV{TEST_SIFTPD_OBJS} || 'objs';

sub slurp {
    open my $fh, '<', $_[0] or return undef;
    local $/;
    return <$fh>;
}

# "siftpd --directives", with these modules loaded: (exit code, lines)
sub directives {
    my (@so) = @_;
    my @g = @so ? ('-g', join(' ', map { "load_module $_;" } @so)) : ();

    $t->sanitizer_env();
    open my $fh, '>', "$d/empty.conf" or die "$d/empty.conf: $!";
    close $fh;

    my $pid = open(my $out, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', "$d/stderr" or die;
        exec $t->binary(), '-p', "$d/", '-c', 'empty.conf', @g,
            '--directives';
        exit 127;
    }
    my @lines = <$out>;
    close $out;
    return ($? >> 8, @lines);
}

my @so = map { File::Spec->rel2abs($_) } glob("$objs/modules/*.so");
my ($rc, @all) = directives(@so);
is($rc, 0, 'siftpd --directives with the dynamic modules loaded')
    or diag(slurp("$d/stderr"));

my %modules = map { (split /\t/)[0] => 1 } @all;
ok(@all > 50 && (!@so || grep { /^sft_hello_module\t/ } @all),
    'every module is listed, the dynamic ones too')
    or diag(join(' ', sort keys %modules));

my @undocumented;
for (@all) {
    chomp;
    my ($module, $context, $name, $syntax, $dflt, $text) = split /\t/, $_, -1;
    push @undocumented, "$name ($module)"
        if !defined $text || $syntax eq '' || $text eq '';
}
is(join(', ', @undocumented), '',
    'every directive has a syntax and a description in its '
    . 'sft_command_doc()');

# the committed reference is what "make docs" makes now

SKIP: {
    my ($v) = `$objs/siftpd -V 2>&1` =~ /^modules: (.*)$/m;
    my @std = qw/sft_ftp_module sft_sftp_module sft_http_module/;
    skip 'not every standard module is built in', 3
        if grep { ($v // '') !~ /\b$_\b/ } @std;

    my ($rc2, @builtin) = directives();
    open my $fh, '>', "$d/directives.tsv" or die;
    print $fh @builtin;
    close $fh;
    mkdir "$d/out";
    my $gen = `perl auto/docs $d/directives.tsv $d/out 2>&1`;
    diag($gen) if $gen ne '' || $rc2;

    for my $f ('docs/directives.md', 'man/siftpd.8', 'man/siftpd.conf.5') {
        my $want = slurp("$d/out/$f") // "(not made)\n";
        ok((slurp($f) // '') eq $want, "$f is what make docs makes now")
            or diag("run \"make docs\" and commit $f");
    }
}

SKIP: {
    skip 'no groff (Debian package groff-base)', 2
        unless system('groff -v >/dev/null 2>&1') == 0;

    my $w = '';
    for my $f ('man/siftpd.8', 'man/siftpd.conf.5') {
        $w .= `groff -man -Tutf8 -ww -z $f 2>&1`;
    }
    is($w, '', 'groff renders the man pages without a warning');

    (my $text = `groff -man -Tutf8 man/siftpd.conf.5 2>/dev/null`)
        =~ s/.\x08//g;
    like($text, qr/^DIRECTIVES\n.*^ +listen address:port \[ssl\] \[proxy_protocol\];$/ms,
        'siftpd.conf(5) renders, with the directives');
}

is(join('', map { slurp($_) // '' } glob("$d/sanitizer*")), '',
    'no sanitizer errors');
