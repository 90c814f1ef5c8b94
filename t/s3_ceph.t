#!/usr/bin/perl

# s3_ceph.t -- the s3 storage driver on a real Ceph cluster
# (Test::Siftpd::Ceph: a monitor, three OSDs on memstore, radosgw), which
# checks what moto does not: a storage whose secret key is wrong is
# refused at the start with one line, the right keys work; uploads with
# Content-MD5 (which Ceph checks: a wrong one is refused) of one part
# and of several, and with CRC-32C (which Ceph ignores), byte-identical;
# renames onto an existing name refused without the overwrite
# permission, and an upload's commit refused 412 when the name appeared
# meanwhile, the other object kept; APPE and REST + STOR by
# UploadPartCopy; SSE-S3, which Ceph refuses, answered with an error and
# a line, not a hang; and an OSD killed by SIGKILL during a 200 MiB FTP
# upload, which completes byte-identical.  Every process is stopped by
# pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Digest::MD5;
use POSIX qw/:sys_wait_h/;
use Test::Siftpd qw/port/;
use Test::Siftpd::Ceph;

my $t = Test::Siftpd->new()->has('ftp', 's3_storage');
my $d = $t->testdir();

my $ceph = Test::Siftpd::Ceph->start($t);
my $ep = $ceph->endpoint();

$t->write_file('creds', "[default]\naws_access_key_id = @{[ $ceph->access() ]}\n"
    . "aws_secret_access_key = @{[ $ceph->secret() ]}\n");
$t->write_file('wrong', "[default]\naws_access_key_id = @{[ $ceph->access() ]}\n"
    . "aws_secret_access_key = not-the-secret-key\n");
chmod 0600, "$d/creds", "$d/wrong";

my $common = <<"EOF";
        driver s3;
        s3_endpoint $ep;
        s3_bucket files;
        s3_part_size 5m;
        s3_retries 2;
        s3_timeout 60s;
EOF

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage cloud {
$common
    s3_prefix md5/;
    s3_checksum md5;
    s3_credentials file %%TESTDIR%%/creds;
}
storage crc {
$common
    s3_prefix crc/;
    s3_checksum crc32c;
    s3_credentials file %%TESTDIR%%/creds;
}
storage sse {
$common
    s3_prefix sse/;
    s3_sse s3;
    s3_credentials file %%TESTDIR%%/creds;
}
storage wrong {
$common
    s3_prefix wrong/;
    s3_credentials file %%TESTDIR%%/wrong;
}
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage cloud; } }
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('carol', 'pw', perms => 'list,download,upload,rename',
    storage => 'cloud', home => '/bob');
$t->user_add('cris', 'pw', perms => 'all', storage => 'crc');
$t->user_add('sam', 'pw', perms => 'all', storage => 'sse');
$t->user_add('eve', 'pw', perms => 'all', storage => 'wrong');

$t->run();

my $ftp = port(8021);

sub bytes {
    my ($seed, $n) = @_;
    srand($seed);
    return substr(pack('N*', map { int(rand(4294967296)) } 0 .. $n / 4),
        0, $n);
}

# the objects' bytes as Ceph serves them, or "status N", in one call
sub objects {
    my (@keys) = @_;
    my @files = map { "got$_" } 0 .. $#keys;
    my @st = split /\n/,
        $ceph->s3('get', map { ($keys[$_], "$d/$files[$_]") } 0 .. $#keys);
    my @got;

    for my $i (0 .. $#keys) {
        my $st = $st[$i] // '-';
        push @got, $st eq '200' ? $t->read_file($files[$i]) : "status $st";
        unlink("$d/$files[$i]");
    }

    return @got;
}

sub object { return (objects(@_))[0] }

sub stor {
    my ($user, $file, $name, @opts) = @_;
    return system('curl', '-s', '--max-time', '120', @opts, '-T',
        "$d/$file", "ftp://$user:pw\@127.0.0.1:$ftp/$name") >> 8;
}

# signatures: the wrong secret refused at the start, with one line

my $wrong = qr/\[error\] .*S3 storage "wrong": bucket "files" at \Q$ep\E answered status 403, SignatureDoesNotMatch/;
ok($t->wait_log($wrong, 60), 'a wrong secret key: refused at the start');
my @lines = grep { /S3 storage "wrong"/ } split /\n/, $t->read_file('error.log');
is(scalar @lines, 1, 'a wrong secret key: one line') or diag("@lines");

like($t->ftp_commands($ftp, 'eve', 'SIZE x'), qr/^SIZE x 550$/m,
    'a wrong secret key: a request refused, 550');

# Content-MD5: Ceph checks it; one part and three, byte-identical

is($ceph->s3('badmd5', 'md5/bad'), '400', 'Ceph refuses a wrong Content-MD5');

$t->write_file('s5000', bytes(5, 5000));
$t->write_file('s12m', bytes(12, 12 * 1024 * 1024));

my ($s5000, $s12m) = ($t->read_file('s5000'), $t->read_file('s12m'));

is(stor('bob', 's5000', 's5000'), 0, 'md5: STOR of 5000 bytes');
is(stor('bob', 's12m', 's12m'), 0, 'md5: STOR of 12 MiB');
is(stor('cris', 's12m', 's12m'), 0, 'crc32c: STOR of 12 MiB');
is(stor('cris', 's5000', 's5000'), 0, 'crc32c: STOR of 5000 bytes');

my @got = objects(qw{md5/bob/s5000 md5/bob/s12m crc/cris/s12m
    crc/cris/s5000});
ok($got[0] eq $s5000, 'md5: 5000 bytes (PutObject) byte-identical');
ok($got[1] eq $s12m, 'md5: 12 MiB (three parts) byte-identical');
ok($got[2] eq $s12m,
    'crc32c: 12 MiB byte-identical (Ceph ignores the checksum)');
ok($got[3] eq $s5000, 'crc32c: 5000 bytes byte-identical');

# no-clobber: a rename onto an existing name, and a commit that finds
# the name taken meanwhile (412)

my $out = $t->ftp_commands($ftp, 'carol', 'RNFR s5000', 'RNTO s12m');
like($out, qr/^RNTO s12m 550$/m,
    'a rename onto an existing name without overwrite: 550');
$out = $t->ftp_commands($ftp, 'bob', 'RNFR s5000', 'RNTO moved');
like($out, qr/^RNTO moved 250$/m, 'a rename: 250');

@got = objects(qw{md5/bob/s12m md5/bob/moved md5/bob/s5000});
ok($got[0] eq $s12m, 'a rename without overwrite: the other unchanged');
ok($got[1] eq $s5000 && $got[2] eq 'status 404',
    'a rename: the object moved');

$t->write_file('theirs', 'written straight into the bucket');
$t->write_file('race.py', <<'PY');
import ftplib, subprocess, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=60)
f.login('carol', 'pw')
f.voidcmd('TYPE I')
c = f.transfercmd('STOR ' + sys.argv[2])
c.sendall(b'x' * int(sys.argv[3]))
# the name taken meanwhile, straight in the bucket
print('put', subprocess.run(sys.argv[4:], capture_output=True,
                            text=True).stdout.strip())
c.close()
try:
    print('reply', f.voidresp())
except ftplib.all_errors as e:
    print('reply', str(e))
f.quit()
PY

for my $case (['race', 5000, 'PutObject'],
              ['racemp', 6 * 1024 * 1024, 'CompleteMultipartUpload'])
{
    my ($name, $n, $op) = @$case;
    my $race = `timeout 120 python3 $d/race.py $ftp $name $n @{[
        $ceph->s3_command('put', "md5/bob/$name", "$d/theirs") ]} 2>&1`;
    like($race, qr/^put ok\nreply 55\d/m,
        "no-clobber, the name taken during the upload: $op refused")
        or diag($race);
    ok(object("md5/bob/$name") eq 'written straight into the bucket',
        "no-clobber, the name taken during the upload: $op kept the other");
}

is($ceph->s3('uploads'), '0', 'no multipart upload left behind');

# APPE and REST + STOR at the end: UploadPartCopy of the 12 MiB, then
# the new bytes

$t->write_file('tail', 'tail-of-the-object');
is(stor('bob', 'tail', 's12m', '--append'), 0, 'APPE to 12 MiB');
ok(object('md5/bob/s12m') eq $s12m . 'tail-of-the-object',
    'APPE: the concatenation');

$t->write_file('rest.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=60)
f.login('bob', 'pw')
f.storbinary('STOR s12m', io.BytesIO(b'more'), rest=int(sys.argv[2]))
print('stored')
f.quit()
PY
my $rest = `timeout 120 python3 $d/rest.py $ftp @{[ 12 * 1024 * 1024 + 18 ]} 2>&1`;
ok(object('md5/bob/s12m') eq $s12m . 'tail-of-the-objectmore',
    'REST at the end + STOR: the concatenation') or diag($rest);

# SSE-S3: Ceph refuses it (400) without TLS; a reply, not a hang

for my $case (['s5000', 'PutObject'], ['s12m', 'CreateMultipartUpload']) {
    my ($file, $op) = @$case;
    my $rc = stor('sam', $file, $file);
    ok($rc != 0 && $rc != 28, "SSE-S3 refused: $op answered, no timeout")
        or diag("curl exit $rc");
    ok($t->wait_log(qr/\[error\] .*S3 upload of "sse\/sam\/$file" failed: $op answered status 400, \w+/, 10),
        "SSE-S3 refused: $op, a line with the status");
}
is(object('sse/sam/s5000'), 'status 404', 'SSE-S3 refused: no object');

# an OSD killed during a 200 MiB upload: the other two take the writes

system("head -c 209715200 /dev/urandom > $d/huge") == 0 or die;

my $curl = fork();
die "fork: $!" unless defined $curl;
if ($curl == 0) {
    exec('curl', '-s', '--max-time', '240', '-T', "$d/huge",
        "ftp://bob:pw\@127.0.0.1:$ftp/huge") or POSIX::_exit(127);
}

# radosgw's access log: the multipart upload begun, a part on its way

ok($t->wait_for(sub { $ceph->log_of('client.rgw')
        =~ m{"PUT /files/md5/bob/huge\?partNumber=1&} }, 60),
    'the 200 MiB upload: its first part sent');
ok($ceph->kill_daemon('osd1'), 'osd.1 killed (SIGKILL)');

my $end = time() + 240;
sleep(1) while waitpid($curl, WNOHANG) == 0 && time() < $end;
if (kill(0, $curl)) {
    kill('KILL', $curl);
    waitpid($curl, 0);
}
is($? >> 8, 0, 'the 200 MiB upload with an OSD gone: curl exit 0');

sub md5_file {
    my ($path) = @_;
    open my $fh, '<', $path or return "no $path";
    binmode $fh;
    return Digest::MD5->new()->addfile($fh)->hexdigest();
}

unlink("$d/got");
is($ceph->s3('get', 'md5/bob/huge', "$d/got"), '200',
    'the 200 MiB object read back');
is(md5_file("$d/got"), md5_file("$d/huge"),
    'the 200 MiB object byte-identical');
like($ceph->mon_command('{"prefix":"osd stat"}'), qr/3 osds: 2 up/,
    'the cluster has two OSDs up');

unlike($t->read_file('error.log'),
    qr/S3 storage "(cloud|crc|sse)": bucket/,
    'no start line for the storages with the right keys');

$ceph->stop();
$t->done();
