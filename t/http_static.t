#!/usr/bin/perl

# http_static.t -- html_root: the dashboard's files from memory, their
# paths and types, index.html for a directory, dot files left out, ETag =
# Adler-32 and length (checked against Python's zlib) with If-None-Match
# answered 304, a strict Content-Security-Policy, a reload picking up a
# changed file, a failed reload leaving a respawned worker the running
# files; and the dashboard of the source tree in headless Chromium, filled
# from /api/v1/stats.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port http_raw/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/site";
mkdir "$d/site/sub";
$t->write_file('site/index.html', "<p>home</p>\n");
$t->write_file('site/app.js', "console.log(1);\n" x 100);
$t->write_file('site/sub/index.html', "<p>sub</p>\n");
$t->write_file('site/.secret', "hidden\n");

(my $src = $0) =~ s{/t/[^/]+$}{};
$src = '.' if $src eq $0;
my $html = -d "$src/html" ? `cd $src/html && pwd` : '';
chomp $html;

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
http {
    html_root %%TESTDIR%%/site;
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
EOF

$t->write_file_expand('dash.conf', <<"EOF");
daemon off;
pid %%TESTDIR%%/dash.pid;
error_log %%TESTDIR%%/error.log info;
worker_processes 1;
http {
    html_root $html;
    server { listen 127.0.0.1:%%PORT_8081%%; }
}
EOF

$t->run();
my $port = port(8080);

sub get {
    my ($path, $extra) = @_;
    return http_raw($port, "GET $path HTTP/1.1\r\nHost: x\r\n"
        . ($extra // '') . "Connection: close\r\n\r\n") // '';
}

sub adler {
    my ($file) = @_;
    my $out = `python3 -c 'import zlib,sys; b=open(sys.argv[1],"rb").read(); print("%08x-%x" % (zlib.adler32(b), len(b)))' $file`;
    chomp $out;
    return "\"$out\"";
}

my $r = get('/');
like($r, qr/^HTTP\/1\.1 200 /, 'GET / is index.html');
like($r, qr/\r\n\r\n<p>home<\/p>\n$/, 'its content');
like($r, qr/^Content-Type: text\/html; charset=utf-8\r$/m, 'html type');
like($r, qr/^Cache-Control: no-cache\r$/m, 'revalidated, not stored blind');
like($r, qr/^Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';[^\r]* frame-ancestors 'none'\r$/m,
    'a strict Content-Security-Policy: own scripts and styles only');
like($r, qr/^X-Content-Type-Options: nosniff\r$/m, 'types are not sniffed');

my $etag = adler("$d/site/index.html");
my ($got) = $r =~ /^ETag: (\S+)\r$/m;
is($got, $etag, 'ETag is the Adler-32 and the length');

$r = get('/app.js');
like($r, qr/^Content-Type: text\/javascript/m, 'javascript type');
is(($r =~ /^ETag: (\S+)\r$/m)[0], adler("$d/site/app.js"),
    'a larger file\'s ETag too');
like(get('/sub/'), qr/<p>sub<\/p>/, 'a directory\'s index.html');
like(get('/.secret'), qr/^HTTP\/1\.1 404 /, 'dot files are not served');
like(get('/nothing.html'), qr/^HTTP\/1\.1 404 /, 'unknown files: 404');

$r = get('/', "If-None-Match: $etag\r\n");
like($r, qr/^HTTP\/1\.1 304 /, 'If-None-Match with the ETag: 304');
unlike($r, qr/Content-Length|home/, 'without a body or length');
like(get('/', "If-None-Match: \"x\", $etag\r\n"), qr/^HTTP\/1\.1 304 /,
    'the ETag in a list');
like(get('/', "If-None-Match: *\r\n"), qr/^HTTP\/1\.1 304 /, '*');
like(get('/', "If-None-Match: \"00000000-1\"\r\n"), qr/^HTTP\/1\.1 200 /,
    'another ETag: 200');
$r = http_raw($port, "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
like($r, qr/^Content-Length: 12\r$/m, 'HEAD has the length');
unlike($r, qr/home/, 'and no body');

# a reload reads the files again

$t->write_file('site/index.html', "<p>changed</p>\n");
$t->reload_settled() or diag('the worker before the reload is still there');
ok($t->wait_for(sub { get('/') =~ /changed/ }, 10), 'a reload serves the change');
isnt((get('/') =~ /^ETag: (\S+)\r$/m)[0], $etag, 'with a new ETag');

# a reload that fails after the http block was read leaves nothing of its
# configuration behind: a worker respawned then serves the running files

mkdir "$d/other";
$t->write_file('other/index.html', "<p>from the failed reload</p>\n");
my $good = $t->read_file('siftpd.conf');
(my $bad = $good) =~ s{/site;}{/other;};
$t->write_file('siftpd.conf', $bad . "broken_directive;\n");
$t->reload();
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'the reload with a bad configuration failed');
$t->write_file('siftpd.conf', $good);

my ($old) = $t->workers();
kill 'KILL', $old;
ok($t->wait_for(sub { my @w = $t->workers(); @w == 1 && $w[0] != $old }, 10),
    'the killed worker respawned');
$r = get('/');
like($r, qr/^HTTP\/1\.1 200 /, 'the respawned worker serves /');
like($r, qr/<p>changed<\/p>/, 'the running configuration\'s file');

# the dashboard of the source tree, rendered by headless Chromium

SKIP: {
    my ($chromium) = grep { -x } map { "/usr/bin/$_" } qw/chromium chromium-browser/;
    skip 'no html/ in the source tree', 4 unless $html;

    my $pid = fork();
    die unless defined $pid;
    if ($pid == 0) {
        open STDOUT, '>>', "$d/stderr";
        open STDERR, '>>', "$d/stderr";
        exec $t->binary(), '-p', "$d/", '-c', "$d/dash.conf";
        exit 127;
    }
    $t->wait_for(sub { -s "$d/dash.pid" }, 10);
    my $dash = port(8081);

    my $page = http_raw($dash, "GET / HTTP/1.1\r\nHost: x\r\n"
        . "Connection: close\r\n\r\n") // '';
    like($page, qr/<script type="module" src="\/app\.js">/, 'the dashboard page');
    like(http_raw($dash, "GET /style.css HTTP/1.1\r\nHost: x\r\n"
        . "Connection: close\r\n\r\n") // '', qr/^HTTP\/1\.1 200 /,
        'its style sheet');

    SKIP: {
        skip 'no chromium', 2 unless $chromium;

        my $dom = `timeout 60 $chromium --headless --no-sandbox --disable-gpu --user-data-dir=$d/chromium --virtual-time-budget=5000 --dump-dom http://127.0.0.1:$dash/ 2>/dev/null`;
        like($dom, qr/class="status ok">live</, 'Chromium: the page got the stats');
        like($dom, qr/<dt>FTP sessions<\/dt><dd data-key="FTP sessions">0<\/dd>/,
            'Chromium: and shows them');
    }

    kill 'QUIT', $pid;
    waitpid($pid, 0);
}

$t->done();
