#!/usr/bin/perl

# modules.t -- dynamic modules: load_module of a third-party module, and
# one clear error for a missing file, a wrong signature or another version;
# a reload that fails so keeps the running configuration.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Basename qw/dirname/;
use File::Spec;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();
my $objs = File::Spec->rel2abs($ENV{TEST_SIFTPD_OBJS} || dirname($t->binary()));
my $hello = "$objs/modules/sft_hello_module.so";

plan(skip_all => "no $hello (configure --add-dynamic-module=modules/hello)")
    unless -f $hello;

my $conf = <<'EOF';
load_module %%MODULE%%;
%%TEST_GLOBALS%%
worker_processes 1;
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        hello_text "hi from a module";
    }
}
EOF

sub with_module {
    my ($so) = @_;
    my $c = $conf;
    $c =~ s/%%MODULE%%/$so/;
    $t->write_file_expand('siftpd.conf', $c);
}

# a loaded module adds its directive and its route

with_module($hello);
my ($rc, $out) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
is($rc, 0, 'load_module: configuration accepted') or diag($out);

$t->run();
my $r = http_get(port(8080), '/hello');
like($r, qr/^HTTP\/1.1 200 OK/, 'module route answers');
like($r, qr/\r\n\r\nhi from a module$/, 'module directive applied');

# its counter is registered with the rest and shown by the admin module

like(http_get(port(8080), '/metrics'),
    qr/^# HELP siftp_hello_requests_total Requests answered by GET \/hello\.
\# TYPE siftp_hello_requests_total counter
siftp_hello_requests_total 1$/m, 'module counter in /metrics');
like(http_get(port(8080), '/api/v1/stats'), qr/"hello":\{"requests":1\}/,
    'module counter in the JSON');

# without load_module its directive is unknown

$t->write_file_expand('nomod.conf', "http { server { listen 127.0.0.1:1; "
    . "hello_text x; } }\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/nomod.conf");
like($out, qr/nomod.conf:1: unknown directive "hello_text"/,
    'without load_module the directive is unknown');

# mismatched modules, built here from the real headers

my @incs = map { "-I$_" } ('src/core', 'src/event', 'src/http', 'asm', $objs);

sub build_module {
    my ($name, $version, $signature) = @_;

    $t->write_file("$name.c", <<"EOF");
#include <sft_config.h>
#include <sft_core.h>

static sft_module_t  $name = {
    SFT_MODULE_UNSET_INDEX, SFT_MODULE_UNSET_INDEX, NULL, 0, 0,
    $version, $signature,
    NULL, NULL, SFT_CORE_MODULE, NULL, NULL, NULL, NULL, NULL,
    SFT_MODULE_V1_PADDING
};

sft_module_t  *sft_dynamic_modules[] = { &$name, NULL };
char  *sft_dynamic_module_names[] = { "$name", NULL };
EOF

    my $cc = $ENV{CC} || 'cc';
    system("$cc -shared -fPIC @incs -o $d/$name.so $d/$name.c") == 0
        or die "cannot build $name";

    return "$d/$name.so";
}

my @bad = (
    [ "missing file", "$d/nothere.so", qr/dlopen\(\) ".*nothere.so" failed/ ],
    [ "wrong signature",
      build_module('sft_badsig_module', 'SFT_VERSION_NUM', '"8,8,8,111111"'),
      qr/module ".*sft_badsig_module.so" is not binary compatible/ ],
    [ "another version",
      build_module('sft_badver_module', 'SFT_VERSION_NUM + 1',
                   'SFT_MODULE_SIGNATURE'),
      qr/module ".*sft_badver_module.so" version \d+ instead of \d+/ ],
    [ "not a module", $hello =~ s/sft_hello_module.so$/..\/siftpd/r,
      qr/dlopen\(\) ".*" failed|is not a siftpd module/ ],
);

for my $case (@bad) {
    my ($name, $so, $re) = @$case;
    with_module($so);
    ($rc, $out) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
    is($rc, 1, "$name: refused");
    like($out, qr/siftpd.conf:1: /, "$name: file:line");
    like($out, $re, "$name: says why");
    my @lines = grep { /\[emerg\]/ } split /\n/, $out;
    is(scalar @lines, 1, "$name: one error line");
}

# a reload onto a bad module keeps the running configuration

with_module($bad[1][1]);
$t->reload();
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'bad module on reload: kept');
like($t->read_file('error.log'), qr/is not binary compatible/,
    'bad module on reload: logged');
like(http_get(port(8080), '/hello'), qr/hi from a module/,
    'bad module on reload: module still serving');

# a good reload can drop the module

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF
$t->reload_settled() or diag('the workers before the reload are still there');
ok($t->wait_for(sub { http_get(port(8080), '/hello') =~ /^HTTP\/1.1 404/ }),
    'reload without load_module: route gone');

# the counters that remain keep their totals; the module's are gone

$r = http_get(port(8080), '/metrics');
like($r, qr/^siftp_http_requests_total (\d+)$/m, 'metrics after the reload');
my ($requests) = $r =~ /^siftp_http_requests_total (\d+)$/m;
cmp_ok($requests // 0, '>=', 6, 'requests before the reload still counted');
unlike($r, qr/hello_requests/, 'the module counter left with the module');

$t->done();
