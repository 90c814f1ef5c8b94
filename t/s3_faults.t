#!/usr/bin/perl

# s3_faults.t -- an S3 endpoint that hangs, is overloaded or is down, and
# a worker that keeps serving everyone else meanwhile: moto_server behind
# t/s3_standin.py, which holds every request of a key with "hang" in its
# name until it is released, answers those with "slowdown" 503 SlowDown
# and fails every UploadPart of those with "broken" with 500; and a
# storage whose endpoint nobody listens on.  With one worker, a download
# whose first request (its peek) hangs stays pending while a session on a posix home and
# other S3 sessions (FTP and SFTP, a multipart upload among them) finish
# their transfers, and a session on a storage with a short timeout gets
# its 451; released, the download completes byte-identical.  503s and a
# refused connection are retried (with the waits logged), then answered
# FTP 451 and SFTP failure with a message, with one error line naming the
# client and the user; an upload whose parts fail leaves no object and no
# multipart upload.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use POSIX qw/:sys_wait_h/;
use Test::Siftpd qw/port/;
use Test::Siftpd::S3 qw/s3_storage s3_proxied s3_object s3_put s3_uploads
    s3_ftp_sftp/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my ($moto, $proxy) = s3_proxied($t);
my $nobody = port(8950);

mkdir "$d/data";
mkdir "$d/data/paula";

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
@{[ s3_storage('cloud', $proxy, 's3_part_size 5m', 's3_retries 2', 's3_timeout 120s') ]}
@{[ s3_storage('hasty', $proxy, 's3_retries 1', 's3_timeout 2s') ]}
storage down {
    driver s3;
    s3_endpoint http://127.0.0.1:$nobody;
    s3_bucket files;
    s3_credentials file %%TESTDIR%%/creds;
    s3_retries 1;
    s3_timeout 5s;
}
@{[ s3_ftp_sftp('cloud') ]}
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('carol', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('paula', 'pw', perms => 'all', storage => 'local');
$t->user_add('hank', 'pw', perms => 'all', storage => 'hasty',
    home => '/bob');
$t->user_add('dora', 'pw', perms => 'all', storage => 'down');
my $key = $t->user_key('bob');
$t->user_key('carol');
$t->user_key('hank');
$t->user_key('dora');

for my $f (['three', 3 * 1024 * 1024], ['six', 6 * 1024 * 1024 + 3],
    ['small', 70000])
{
    system("head -c $f->[1] /dev/urandom > $d/$f->[0]");
}

# straight into moto, past the stand-in
for my $k ('hang-one', 'hang-two', 'slowdown-x') {
    s3_put($moto, "srv/bob/$k", "$d/three");
}

$t->run();

my $ftp = port(8021);
my $sftp = port(8022);

sub standin {
    my ($what) = @_;
    return `curl -s --max-time 10 http://127.0.0.1:$proxy/__$what`;
}

sub same {
    my ($a, $b) = @_;
    return system('cmp', '-s', "$d/$a", "$d/$b") == 0;
}

# each FTP command's whole reply, a download's or upload's with its bytes
$t->write_file('ftp.py', <<'PY');
import ftplib, io, sys
port, user, testdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
f = ftplib.FTP()
f.connect('127.0.0.1', port, timeout=120)
f.login(user, 'pw')
for c in sys.argv[4:]:
    try:
        if c.startswith('RETR '):
            b = io.BytesIO()
            r = f.retrbinary(c, b.write)
            open(testdir + '/got-' + c[5:], 'wb').write(b.getvalue())
        elif c.startswith('STOR '):
            r = f.storbinary(c, open(testdir + '/' + c[5:], 'rb'))
        else:
            r = f.sendcmd(c)
    except ftplib.all_errors as e:
        r = str(e)
    print(c, '=>', r, flush=True)
f.quit()
PY

sub ftp {
    my ($user, @commands) = @_;
    my $args = join(' ', map { "'$_'" } @commands);
    return `timeout 200 python3 $d/ftp.py $ftp $user $d $args 2>&1`;
}

# a download whose peek hangs, in the background

my $hung = fork();
die "fork: $!" unless defined $hung;
if ($hung == 0) {
    open(STDOUT, '>', "$d/hung.out") or die;
    open(STDERR, '>&', \*STDOUT) or die;
    exec('curl', '-sS', '--max-time', '200', '-o', "$d/got-hang",
        "ftp://bob:pw\@127.0.0.1:$ftp/hang-one") or die;
}

END {
    local $?;
    if ($hung && waitpid($hung, WNOHANG) == 0) {
        kill('TERM', $hung);
        waitpid($hung, 0);
    }
}

ok($t->wait_for(sub { standin('held') >= 1 }, 30),
    'the download\'s peek is held by the stand-in');

# meanwhile, on the same worker: a posix home, S3 homes by FTP and SFTP,
# and a short timeout running out

my $paula = "curl -sS --max-time 60 ftp://paula:pw\@127.0.0.1:$ftp/six";
my $out = `$paula -T $d/six 2>&1` . `$paula -o $d/paula-six 2>&1`;
ok(same('six', 'data/paula/six') && same('six', 'paula-six'),
    'during the hang: a posix home\'s upload and download') or diag($out);

$out = ftp('carol', 'STOR six', 'RETR six', 'SIZE six');
ok(same('six', 'got-six')
    && (s3_object($moto, 'srv/carol/six') // '') eq $t->read_file('six'),
    'during the hang: an S3 multipart upload and its download by FTP')
    or diag($out);

my $rc;
($rc, $out) = $t->sftp_batch($sftp, 'carol',
    "put $d/small small\nget small $d/carol-small\nls -l\n");
ok($rc == 0 && same('small', 'carol-small'),
    'during the hang: an S3 upload and download by SFTP') or diag($out);

$t->write_file('hang-up', 'never');
$out = ftp('hank', 'RETR hang-two', 'STOR hang-up');
like($out, qr/^RETR hang-two => 451 /m,
    'during the hang: a short s3_timeout ran out, retried: 451') or diag($out);
like($out, qr/^STOR hang-up => 451 /m,
    'during the hang: an upload whose name cannot be looked at: 451');

ok(waitpid($hung, WNOHANG) == 0 && standin('log') !~ /hang-one/,
    'all of that while the hung download is still pending');

# released: the download goes on

standin('release');
waitpid($hung, 0);
is($? >> 8, 0, 'released: the download completes')
    or diag($t->read_file('hung.out'));
$hung = 0;
ok(same('three', 'got-hang'), 'released: byte-identical');
ok(!defined s3_object($moto, 'srv/bob/hang-up'),
    'the upload that timed out left nothing');

my $log = $t->read_file('error.log');
like($log, qr/\[error\] .*S3 storage "hasty": GetObject of "srv\/bob\/hang-two" failed after 2 attempts: .*client: 127\.0\.0\.1.*user: "hank"/,
    'the timeout: one error line with the attempts, the client and the user')
    or diag($log);

# 503 SlowDown for good: retried with waits, then an error reply

$out = ftp('bob', 'RETR slowdown-x');
like($out, qr/^RETR slowdown-x => 451 Local error: input\/output error/m,
    'FTP: 503 SlowDown after the retries: 451') or diag($out);

$log = $t->read_file('error.log');
my @waits = $log =~
    /S3 GET "srv\/bob\/slowdown-x": status 503, attempt (\d+ again in \d+) ms/g;
is(scalar @waits, 2, 'two attempts again after 503') or diag($log);
ok(@waits == 2 && $waits[0] =~ /^2 again in (\d+)$/ && $1 >= 50 && $1 <= 100
    && $waits[1] =~ /^3 again in (\d+)$/ && $1 >= 100 && $1 <= 200,
    "the waits doubled, with jitter: @waits");
my @lines = grep { /\[error\]/ && /slowdown-x/ } split /\n/, $log;
is(scalar @lines, 1, 'one error line');
like($lines[0] // '', qr/S3 storage "cloud": GetObject of "srv\/bob\/slowdown-x" failed: status 503.*client: 127\.0\.0\.1.*user: "bob"/,
    'it names the operation, the key, the status, the client and the user');

$t->write_file('sftp.py', <<'PY');
import sys
sys.path.insert(0, sys.argv[3])
import paramiko, sftp_raw

port, key = int(sys.argv[1]), sys.argv[2]
for user, path in (('bob', 'slowdown-x'), ('dora', 'x')):
    t = sftp_raw.login(port, key, user)
    s = paramiko.SFTPClient.from_transport(t)
    try:
        s.open(path, 'rb').read()
        sftp_raw.check(user + ': an SFTP read fails', False, 'it did not')
    except IOError as e:
        sftp_raw.check(user + ': an SFTP read fails with a message: '
                       + str(e), len(str(e)) > 0)
    s.close()
    t.close()
PY
my $c;
($c, $out) = $t->python_checks('sftp.py', $sftp, $key,
    Cwd::getcwd() . '/t/lib');
is($c, 2, 'the SFTP checks ran') or diag($out);

# the endpoint down: connections refused, retried, then an error reply

$out = ftp('dora', 'TYPE I', 'SIZE x', 'RETR x');
like($out, qr/^SIZE x => 451 /m, 'endpoint down: SIZE answered 451')
    or diag($out);
like($out, qr/^RETR x => 451 /m, 'endpoint down: RETR answered 451');
ok($t->wait_log(qr/\[error\] .*S3 storage "down": GetObject of "dora\/x" failed after 2 attempts: .*client: 127\.0\.0\.1.*user: "dora"/),
    'endpoint down: an error line with the client and the user');

# an upload whose parts fail for good: nothing of it left

$t->write_file('broken', $t->read_file('six'));
$out = ftp('bob', 'STOR broken');
like($out, qr/^STOR broken => 451 /m, 'parts failing: STOR answered 451')
    or diag($out);
ok(!defined s3_object($moto, 'srv/bob/broken'), 'parts failing: no object');
ok($t->wait_for(sub { s3_uploads($moto) == 0 }, 30),
    'parts failing: no multipart upload left');
ok($t->wait_log(qr/\[error\] .*S3 upload of "srv\/bob\/broken" failed: .*client: 127\.0\.0\.1.*user: "bob"/),
    'parts failing: an error line with the client and the user');

$t->done();
