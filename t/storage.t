#!/usr/bin/perl

# storage.t -- "storage NAME { driver posix; root PATH; }" blocks: a good
# configuration with several storages, and each configuration error
# reported as file:line.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd;

my $t = Test::Siftpd->new();
my $d = $t->testdir();

mkdir "$d/data";
mkdir "$d/data2";
$t->write_file('afile', "x\n");

sub conf_test {
    my ($body) = @_;
    $t->write_file_expand('test.conf',
        "pid        \"%%TESTDIR%%/siftpd.pid\";\n"
        . "error_log  \"%%TESTDIR%%/error.log\" notice;\n"
        . $body);
    return $t->siftpd('-t', '-c', "$d/test.conf");
}

my ($rc, $out) = conf_test(<<'END');
storage local { driver posix; root data; }
storage other {
    root  %%TESTDIR%%/data2;
    driver posix;
}
END
is($rc, 0, 'two storages: exit 0');
like($out, qr/test is successful/, 'two storages: reported');

($rc, $out) = conf_test("storage s { driver posix; root newroot; }\n");
is($rc, 0, 'a missing root: exit 0');
ok(-d "$d/newroot", 'a missing root is made');

my @bad = (
    [ 'root beneath a missing directory',
      "storage s {\n driver posix;\n root nodir/sub;\n}\n",
      qr{test.conf:5: storage root ".*/nodir/sub" is not accessible} ],
    [ 'root is a file', "storage s {\n driver posix;\n root afile;\n}\n",
      qr{test.conf:5: storage root ".*/afile" is not a directory} ],
    [ 'unknown driver', "storage s {\n driver ftpfs;\n}\n",
      qr{test.conf:4: unknown storage driver "ftpfs"} ],
    [ 'no driver', "storage s {\n root data;\n}\n",
      qr{no "driver" in storage "s" in .*test.conf:3} ],
    [ 'no root', "storage s { driver posix; }\n",
      qr{no "root" in storage "s" in .*test.conf:3} ],
    [ 'duplicate', "storage s { driver posix; root data; }\n"
                   . "storage s { driver posix; root data; }\n",
      qr{test.conf:4: duplicate storage "s"} ],
    [ 'outside the block', "root data;\n",
      qr{test.conf:3: "root" directive is not allowed here} ],
);

for my $case (@bad) {
    my ($name, $body, $re) = @$case;
    ($rc, $out) = conf_test($body);
    isnt($rc, 0, "$name: exit status");
    like($out, $re, "$name: message with file:line");
}

done_testing();
