package Test::Siftpd::S3;

# Test::Siftpd::S3 -- what the S3 tests share: moto_server (from PATH,
# else from the venv auto/deps --test makes) and t/s3_standin.py started
# on free 127.0.0.1 ports (skipping when moto is not installed or does
# not start), a C test program run with their addresses and its TAP
# results reported; t/s3_storage.py's in-process moto for the driver's
# tests, or moto_server behind the stand-in as a proxy for siftpd's, with
# a credentials file; the stand-in in front of it or alone for a test of
# siftpd; objects and multipart uploads read straight from moto,
# reproducible bytes to upload; and every server stopped by
# pid at the end.

use warnings;
use strict;

use Exporter qw/import/;
use File::Temp qw/tempdir/;
use IO::Socket::INET;
use JSON::PP;
use Test::More;

use Test::Siftpd;

our @EXPORT_OK = qw/s3_servers s3_run s3_clean s3_storage_moto s3_proxied
    s3_object s3_put s3_put_bytes s3_keys s3_head s3_uploads s3_bytes
    s3_status s3_create_upload s3_standin s3_storage s3_ftp_sftp s3_stats
    s3_pool_whole s3_pool_conf/;

my @pids;

# curl signing with the keys of "creds" (moto refuses a GET unsigned)
my $signed = "curl -sf --max-time 60 --aws-sigv4 aws:amz:us-east-1:s3"
    . " --user test:testsecret";

# Debian has no moto: auto/deps --test puts it into this venv, whose bin
# then goes first on PATH, so that its python3 (with moto) runs the
# servers and the scripts that read the bucket
my $venv = '/var/cache/siftp-tests/moto/bin';

$ENV{PATH} = "$venv:$ENV{PATH}"
    if !has_moto() && -x "$venv/moto_server";


sub start {
    my ($dir, $log, @cmd) = @_;

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open(STDOUT, '>', "$dir/$log") or die;
        open(STDERR, '>&', \*STDOUT) or die;
        exec(@cmd) or die "exec $cmd[0]: $!";
    }

    push @pids, $pid;
}

sub has_moto {
    return grep { -x "$_/moto_server" } split(/:/, $ENV{PATH});
}

sub creds {
    my ($t) = @_;

    $t->write_file('creds', "[default]\naws_access_key_id = test\n"
        . "aws_secret_access_key = testsecret\n");
    chmod 0600, $t->testdir() . '/creds';
}

sub listening {
    my ($port) = @_;

    # moto takes seconds to start, more on a loaded machine
    for (1 .. 900) {
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
        return 1 if $s;
        select(undef, undef, undef, 0.1);
    }

    return 0;
}

END {
    local $?;

    for my $pid (@pids) {
        kill('TERM', $pid);
        waitpid($pid, 0);
    }
}


# skips unless the program and moto are there; starts moto, then the
# stand-in with its own port and the extra arguments the callback gives
# from moto's port; returns the directory and both ports
sub s3_servers {
    my ($prog, $standin_args) = @_;

    plan(skip_all => "no $prog (make unit-tests; --without-s3_module?)")
        unless -x $prog;
    plan(skip_all => 'no moto_server (auto/deps --test)') unless has_moto();

    my $dir = tempdir('siftpd-test-s3-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $moto = Test::Siftpd::port(9000);
    my $standin = Test::Siftpd::port(9001);

    start($dir, 'moto.log', 'moto_server', '-H', '127.0.0.1', '-p', $moto);
    start($dir, 'standin.log', 'python3', 't/s3_standin.py', $standin,
          $standin_args->($moto));

    plan(skip_all => 'moto_server did not start') unless listening($moto);
    plan(skip_all => 'the stand-in did not start') unless listening($standin);

    $ENV{ASAN_OPTIONS} = "log_path=$dir/sanitizer:detect_leaks=1";
    $ENV{UBSAN_OPTIONS} = "log_path=$dir/sanitizer:print_stacktrace=1";

    return ($dir, $moto, $standin);
}

# runs the program, reports each of its results and that it ran its plan
# and exited 0; returns its other output lines
sub s3_run {
    my ($prog, $dir) = @_;

    my $out = `$prog 2>$dir/stderr`;
    my $status = $?;
    my ($planned, $ran, @rest) = (undef, 0);

    for (split(/\n/, $out)) {
        if (/^1\.\.(\d+)/) {
            $planned = $1;
        } elsif (/^(not )?ok \d+ - (.*)$/) {
            ok(!defined $1, $2);
            $ran++;
        } else {
            push @rest, $_;
        }
    }

    ok($planned && $planned > 20 && $ran == $planned,
       "$prog ran its plan");
    is($status, 0, "$prog exited 0");

    return @rest;
}

# skips unless moto and paramiko are there; starts t/s3_storage.py in the
# test's directory with the ports and the extra arguments (its output in
# s3.log), waits for it, and writes the credentials file "creds"
sub s3_storage_moto {
    my ($t, @args) = @_;
    my $d = $t->testdir();

    plan(skip_all => 'no moto_server (auto/deps --test)') unless has_moto();
    plan(skip_all => 'no moto module for python3')
        unless system('python3 -c "import moto.server" 2>/dev/null') == 0;
    plan(skip_all => 'no paramiko')
        unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null')
               == 0;

    start($d, 's3.log', 'python3', 't/s3_storage.py', @args);

    $t->wait_for(sub { $t->read_file('s3.log') =~ /^ready/m }, 120)
        or BAIL_OUT("moto did not start:\n" . $t->read_file('s3.log'));

    creds($t);
}

# skips unless moto is there; starts moto_server and t/s3_standin.py (or
# the script given, with moto's port and the arguments given after its
# own) as a proxy in front of it (moto.log, standin.log in the test's
# directory), makes the bucket "files" and the credentials file "creds";
# returns moto's port and the proxy's
sub s3_proxied {
    my ($t, $script, @args) = @_;
    my $d = $t->testdir();

    plan(skip_all => 'no moto_server (auto/deps --test)') unless has_moto();

    my $moto = Test::Siftpd::port(8900);
    my $proxy = Test::Siftpd::port(8901);

    start($d, 'moto.log', 'moto_server', '-H', '127.0.0.1', '-p', $moto);
    start($d, 'standin.log', 'python3', $script // 't/s3_standin.py', $proxy,
          $moto, @args);

    plan(skip_all => 'moto_server did not start') unless listening($moto);
    plan(skip_all => 'the stand-in did not start') unless listening($proxy);

    system("$signed -o /dev/null -X PUT http://127.0.0.1:$moto/files") == 0
        or BAIL_OUT('moto made no bucket');

    creds($t);

    return ($moto, $proxy);
}

# a configuration block: storage NAME on the bucket "files" at the port,
# under the prefix srv/ with the credentials file "creds", and the other
# directives given ("s3_part_size 5m", ...)
sub s3_storage {
    my ($name, $port, @directives) = @_;

    return join("\n", "storage $name {", '    driver s3;',
        "    s3_endpoint http://127.0.0.1:$port;", '    s3_bucket files;',
        '    s3_prefix srv/;', '    s3_credentials file %%TESTDIR%%/creds;',
        (map { "    $_;" } @directives), '}');
}

# the FTP server on port 8021 and the SFTP server on port 8022 of a test,
# both on storage NAME (the SFTP host key made at the first start)
sub s3_ftp_sftp {
    my ($name) = @_;

    return "ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage $name; } }\n"
        . "sftp {\n    server {\n        listen 127.0.0.1:%%PORT_8022%%;\n"
        . "        host_key %%TESTDIR%%/host_key;\n        storage $name;\n"
        . "    }\n}";
}

# an object of the bucket "files" as moto serves it, or undef
sub s3_object {
    my ($moto, $key) = @_;

    my $body = `$signed http://127.0.0.1:$moto/files/$key`;
    return $? == 0 ? $body : undef;
}

# the file put into the bucket "files" under the key, past siftpd, with
# the content type if one is given
sub s3_put {
    my ($moto, $key, $file, $type) = @_;

    # curl -T would append the file's name to a key that ends in "/"
    my $body = $key =~ m{/$} ? "-X PUT --data-binary \@$file" : "-T $file";
    $body .= " -H 'Content-Type: $type'" if defined $type;

    system("$signed -o /dev/null $body http://127.0.0.1:$moto/files/$key")
        == 0 or BAIL_OUT("moto took no $key");
}

# N bytes of SEED put into the bucket "files" under the key
sub s3_put_bytes {
    my ($moto, $key, $n, $seed) = @_;
    my $file = File::Temp->new();

    print $file s3_bytes($seed, $n);
    close $file;
    s3_put($moto, $key, $file->filename);
}

# the keys of the bucket "files" under the prefix, in order: key => size
sub s3_keys {
    my ($moto, $prefix) = @_;
    my ($token, @keys) = ('');
    my $q = sub { (my $v = shift) =~ s/([^A-Za-z0-9_.~-])/sprintf('%%%02X', ord $1)/ge; $v };

    for (1 .. 1000) {
        my $xml = `$signed 'http://127.0.0.1:$moto/files?list-type=2&prefix=@{[ $q->($prefix) ]}$token'`;
        $? == 0 or BAIL_OUT("moto listed nothing under $prefix");
        push @keys, map { m{<Key>(.*?)</Key>.*<Size>(\d+)</Size>}s }
            $xml =~ m{<Contents>(.*?)</Contents>}gs;
        my ($next) = $xml =~ m{<NextContinuationToken>(.*?)</NextContinuationToken>};
        return @keys unless defined $next;
        $token = '&continuation-token=' . $q->($next);
    }

    BAIL_OUT("moto's listing under $prefix never ended");
}

# an object's response headers (lower-cased names), or undef
sub s3_head {
    my ($moto, $key) = @_;

    my $out = `$signed -I http://127.0.0.1:$moto/files/$key`;
    return undef if $? != 0;
    return { map { /^([^:]+):\s*(.*?)\r?$/ ? (lc $1, $2) : () }
             split /\n/, $out };
}

# the HTTP status of a HEAD of the key: "200", "404"
sub s3_status {
    my ($moto, $key) = @_;

    # -f: curl fails on a 404 but still writes its status
    return `$signed -o /dev/null -w '%{http_code}' -I http://127.0.0.1:$moto/files/$key`;
}

# a multipart upload started under the key, past siftpd
sub s3_create_upload {
    my ($moto, $key) = @_;

    system("$signed -o /dev/null -X POST 'http://127.0.0.1:$moto/files/$key?uploads'")
        == 0 or BAIL_OUT("moto started no upload of $key");
}

# the multipart uploads under way in the bucket "files"
sub s3_uploads {
    my ($moto) = @_;

    my $xml = `$signed 'http://127.0.0.1:$moto/files?uploads'`;
    return scalar(() = $xml =~ /<UploadId>/g);
}

# N bytes that SEED always makes alike
sub s3_bytes {
    my ($seed, $n) = @_;
    srand($seed);
    return substr(pack('N*', map { int(rand(4294967296)) } 0 .. $n / 4),
        0, $n);
}

# t/s3_standin.py on port in the test's directory (its output in
# standin-PORT.log): a proxy to the upstream port (the request log at
# GET /__log), or alone (STS, IMDS) without one; waits until it listens
sub s3_standin {
    my ($t, $port, @upstream) = @_;

    start($t->testdir(), "standin-$port.log", 'python3', 't/s3_standin.py',
          $port, @upstream);

    listening($port) or BAIL_OUT('the S3 stand-in did not start');
}

# the admin API's /api/v1/stats on the port, decoded ({} without an answer)
sub s3_stats {
    my ($port) = @_;

    my ($body) = (Test::Siftpd::http_get($port, '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    return eval { decode_json($body // '') } || {};
}

# siftpd.conf of one worker whose FTP and SFTP servers store into the S3
# storage "cloud" on moto's port (parts of 5 MiB, one retry), with a
# buffer pool of the size given in chunks of 256 KiB and the admin API
# on port 8080: the tests of uploads that share a small pool
sub s3_pool_conf {
    my ($t, $moto, $pool) = @_;

    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
buffer_pool_bytes $pool;
transfer_chunk_bytes 256k;
events { worker_connections 1024; }
max_connections_per_address 1000;
users %%TESTDIR%%/users;
storage cloud {
    driver s3;
    s3_endpoint http://127.0.0.1:$moto;
    s3_bucket files;
    s3_prefix srv/;
    s3_credentials file %%TESTDIR%%/creds;
    s3_part_size 5m;
    s3_retries 1;
    s3_timeout 60s;
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage cloud;
        tls_login off;
        tls_data off;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage cloud;
        login_grace_time 60s;
    }
}
EOF
}

# the buffer pool whole, from the admin API on port: every chunk free,
# none reserved
sub s3_pool_whole {
    my ($port) = @_;

    my $p = s3_stats($port)->{buffer_pool} // {};
    return defined $p->{free} && $p->{free} == ($p->{total} // -1)
        && ($p->{reserved} // -1) == 0;
}

# no report from the sanitizers in the directory
sub s3_clean {
    my ($dir) = @_;

    opendir(my $dh, $dir) or die;
    my @san = grep { /^sanitizer/ } readdir $dh;
    is("@san", '', 'no sanitizer reports');
}

1;
