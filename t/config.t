#!/usr/bin/perl

# config.t -- the configuration language: -t, -T, -V, -q, -g, include with
# globs, quoting, units, and one error of each class reported as
# file:line: message.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd;

my $t = Test::Siftpd->new();
my $d = $t->testdir();

sub conf_test {
    my ($conf, @args) = @_;
    $t->write_file_expand('test.conf', $conf);
    return $t->siftpd('-t', '-c', "$d/test.conf", @args);
}

my $good = <<'EOF';
# a comment
worker_processes  2;     # another
pid               "%%TESTDIR%%/siftpd.pid";
error_log         '%%TESTDIR%%/error.log' notice;
worker_shutdown_timeout  1m30s;
buffer_pool_bytes        8m;
transfer_chunk_bytes     64k;
thread_pool io threads=2 max_queue=128;

events { worker_connections 128; }

include conf.d/*.conf;

http {
    keepalive_timeout 10s;
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        client_max_body_size 2k;
    }
}
EOF

mkdir "$d/conf.d";
$t->write_file('conf.d/a.conf', "# included\n");
$t->write_file('conf.d/b.conf', "daemon off;\n");

my ($rc, $out) = conf_test($good);
is($rc, 0, 'good configuration: exit 0');
like($out, qr/test is successful/, 'good configuration: reported');

($rc, $out) = conf_test($good, '-q');
is($out, '', '-q: silent on success');

($rc, $out) = $t->siftpd('-T', '-c', "$d/test.conf");
is($rc, 0, '-T: exit 0');
like($out, qr/# configuration file \Q$d\E\/test.conf:\n# a comment/,
    '-T: dumps the main file');
like($out, qr/# configuration file \Q$d\E\/conf.d\/b.conf:\ndaemon off;/,
    '-T: dumps included files');

($rc, $out) = $t->siftpd('-V');
like($out, qr/siftpd version: siftpd\/\d+\.\d+\.\d+/, '-V: version');
like($out, qr/configure arguments:/, '-V: configure arguments');
like($out, qr/modules:.*sft_core_module/, '-V: modules');

($rc, $out) = $t->siftpd('-v');
unlike($out, qr/configure arguments/, '-v: version only');

($rc, $out) = $t->siftpd('-h');
like($out, qr/^ +siftpd .*hash-password$/m, '-h: hash-password listed');
like($out, qr/^ +siftpd .*user add NAME/m, '-h: user listed');

# -g directives come first and override the file's single-valued ones
# (the include glob brought "daemon off;")
($rc, $out) = conf_test($good, '-g', 'daemon on; error_log stderr;');
is($rc, 0, '-g: overrides the file') or diag($out);
like($out, qr{\Q$d\E/conf.d/b.conf:1: "daemon" directive is overridden by -g},
    '-g: the overridden directive names file:line');
like($out, qr{test.conf:4: "error_log" directive is overridden by -g},
    '-g: error_log overridden');

($rc, $out) = conf_test($good, '-g', 'daemon on; daemon off;');
is($rc, 1, '-g: a duplicate within -g fails');
like($out, qr/command line:1: "daemon" directive is duplicate/,
    '-g: its duplicate names the command line');

($rc, $out) = conf_test($good, '-g', 'bogus_directive on;');
like($out, qr/command line:1: unknown directive "bogus_directive"/,
    '-g: errors name the command line');

# one error per class, each with file:line

my @bad = (
    [ "unknown directive", "worker_processes 1;\nfoo bar;\n",
      qr/test.conf:2: unknown directive "foo"$/m ],
    [ "misspelt directive", "worker_procesess 1;\n",
      qr/test.conf:1: unknown directive "worker_procesess", did you mean "worker_processes"\?$/m ],
    [ "misspelt directive in a server",
      "ftp {\n server {\n  listne 127.0.0.1:2121;\n }\n}\n",
      qr/test.conf:3: unknown directive "listne", did you mean "listen"\?$/m ],
    [ "misspelt, but valid only elsewhere", "events { sendfil on; }\n",
      qr/test.conf:1: unknown directive "sendfil"$/m ],
    [ "wrong context", "events { pid x; }\n",
      qr/test.conf:1: "pid" directive is not allowed here/ ],
    [ "wrong context, block", "http { server { events { } } }\n",
      qr/test.conf:1: "events" directive is not allowed here/ ],
    [ "argument count", "worker_processes 1 2;\n",
      qr/test.conf:1: invalid number of arguments in "worker_processes"/ ],
    [ "duplicate", "daemon off;\n\ndaemon on;\n",
      qr/test.conf:3: "daemon" directive is duplicate/ ],
    [ "bad flag", "daemon maybe;\n",
      qr/test.conf:1: invalid value "maybe" in "daemon" directive, it must be "on" or "off"/ ],
    [ "bad size", "buffer_pool_bytes 64x;\n",
      qr/test.conf:1: "buffer_pool_bytes" directive invalid value/ ],
    [ "bad time", "worker_shutdown_timeout 5q;\n",
      qr/test.conf:1: "worker_shutdown_timeout" directive invalid value/ ],
    [ "bad number", "worker_processes many;\n",
      qr/test.conf:1: "worker_processes" directive invalid value/ ],
    [ "bad level", "error_log stderr loud;\n",
      qr/test.conf:1: invalid log level "loud"/ ],
    [ "missing semicolon", "daemon off\n",
      qr/test.conf:2: unexpected end of file, expecting ";" or "}"/ ],
    [ "unclosed block", "events {\n worker_connections 64;\n",
      qr/test.conf:3: unexpected end of file, expecting "}"/ ],
    [ "stray brace", "daemon off;\n}\n",
      qr/test.conf:2: unexpected "}"/ ],
    [ "block without brace", "events;\n",
      qr/test.conf:1: directive "events" has no opening "\{"/ ],
    [ "unterminated quote", "pid \"abc;\n",
      qr/test.conf:2: unexpected end of file in a quoted string/ ],
    [ "escaped newline in a word", "pid a\\\nb.pid;\ndaemon maybe;\n",
      qr/test.conf:3: invalid value "maybe" in "daemon" directive/ ],
    [ "missing include", "include nothere.conf;\n",
      qr/test.conf:1: open\(\) ".*nothere.conf" failed/ ],
    [ "bad listen", "http { server { listen 999.1.1.1:80; } }\n",
      qr/test.conf:1: invalid address "999.1.1.1:80" in "listen"/ ],
    [ "server without listen", "http {\n server {\n }\n}\n",
      qr/test.conf:2: no "listen" in http server/ ],
    [ "duplicate listen",
      "http { server { listen 127.0.0.1:1; } server { listen 127.0.0.1:1; } }\n",
      qr/test.conf:1: duplicate listen 127.0.0.1:1/ ],
    [ "ssl on sftp", "sftp { server { listen 127.0.0.1:1 ssl; } }\n",
      qr/test.conf:1: "ssl" is not supported by sftp/ ],
    [ "https without a certificate",
      "http { server { listen 127.0.0.1:1 ssl; } }\n",
      qr/test.conf:1: no "ssl_certificate" in the http server of "listen 127.0.0.1:1 ssl"/ ],
    [ "chunk size", "transfer_chunk_bytes 1000;\n",
      qr/"transfer_chunk_bytes" must be a multiple of 4k/ ],
    [ "thread pool", "thread_pool io max_queue=5;\n",
      qr/test.conf:1: "thread_pool" must have "threads" parameter/ ],
    [ "http limit",
      "http { client_header_buffer_size 10; server { listen 127.0.0.1:1; } }\n",
      qr/"client_header_buffer_size" must be between 1k and 1m/ ],
    [ "ipv6 prefix", "login_ipv6_prefix 129;\n",
      qr/"login_ipv6_prefix" must be 1 to 128/ ],
    [ "module too late", "events { }\nload_module modules/x.so;\n",
      qr/test.conf:2: "load_module" directive is specified too late/ ],

    # "user" is looked up only by a root master
    $> != 0 ? () : (
    [ "unknown user", "daemon off;\nuser siftpd-no-such-user;\n",
      qr/test.conf:2: user "siftpd-no-such-user" does not exist$/m ],
    [ "unknown group", "user root siftpd-no-such-group;\n",
      qr/test.conf:1: group "siftpd-no-such-group" does not exist$/m ],
    ),
);

for my $case (@bad) {
    my ($name, $conf, $re) = @$case;
    ($rc, $out) = conf_test($conf);
    is($rc, 1, "$name: exit 1");
    like($out, $re, "$name: message with file:line");
    like($out, qr/test failed/, "$name: test failed") if $name eq 'duplicate';
}

# quoting and escapes: a path with a space and an escaped quote

$t->write_file('we"ird dir.conf', "daemon off;\n");
($rc, $out) = conf_test("include \"%%TESTDIR%%/we\\\"ird dir.conf\";\n");
is($rc, 0, 'quoted include with escapes') or diag($out);

($rc, $out) = conf_test("include %%TESTDIR%%/we\\\"ird\\ dir.conf;\n");
is($rc, 0, 'unquoted word with escaped quote and space') or diag($out);

# sizes and times with units
($rc, $out) = conf_test("buffer_pool_bytes 1G;\ntransfer_chunk_bytes 1m;\n"
    . "worker_shutdown_timeout 1h;\n");
is($rc, 0, 'units: G, m, h') or diag($out);

($rc, $out) = conf_test("worker_shutdown_timeout 500ms;\n");
is($rc, 0, 'units: ms') or diag($out);

done_testing();
