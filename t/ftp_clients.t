#!/usr/bin/perl

# ftp_clients.t -- real clients against the FTP module: lftp mirrors a
# tree of a few hundred files (spaces and UTF-8 in the names) up and down,
# byte-identical by SHA-256, on IPv4 and on [::1]; curl in passive (PASV
# and EPSV) and active mode, with resume both ways, a listing and quoted
# commands; ABOR in the middle of a download, then the session goes on;
# ABOR that comes after the client's close has ended the transfer;
# a passive data connection from another address (127.0.0.2) is refused
# and the right one still gets the data.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Digest::SHA;
use File::Find;
use File::Path qw/make_path/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_login/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;
plan(skip_all => 'no lftp') unless system('lftp --version >/dev/null') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

my $v6 = system('python3 -c "import socket; s = socket.socket('
    . 'socket.AF_INET6); s.bind((\'::1\', 0))" 2>/dev/null') == 0;
my $v6listen = $v6 ? "listen [::1]:" . port(8022) . ";" : '';

ftp_conf($t, connections => 256, main => 'max_connections_per_address 64;',
    server => $v6listen);
ftp_user($t, 'alice', 'pw-a', 'all');

# the tree: 300 files in 12 directories, names with spaces and UTF-8,
# sizes from 0 to 40 KB and three of 1 MB

my @dirs = ('a', 'b c', "d\x{e4}", "\x{65e5}\x{672c} x", 'e/f g', "e/\x{f1}",
            'h', 'i j/k', 'l', "m \x{20ac}", 'n', 'o p q');
my $src = "$d/src";
srand(42);
my $files = 0;
for my $i (0 .. 299) {
    my $dir = $dirs[$i % @dirs];
    my $name = $i % 3 == 0 ? "file $i.txt"
             : $i % 3 == 1 ? "f\x{fc}r-$i \x{263a}.bin" : "plain$i";
    my $path = "$src/$dir/$name";
    utf8::encode($path);
    (my $parent = $path) =~ s{/[^/]*$}{};
    make_path($parent);
    my $size = $i < 3 ? 1048576 : int(rand(40000));
    $size = 0 if $i == 10;
    open my $f, '>', $path or die "$path: $!";
    print $f join('', map { chr(int(rand(256))) } 1 .. ($size % 4096));
    print $f "\0" x ($size - $size % 4096) if $size >= 4096;
    close $f;
    $files++;
}
is($files, 300, '300 files in the source tree');

# every file under a root, relative name => sha256

sub tree {
    my ($root) = @_;
    my %h;
    find({ no_chdir => 1, wanted => sub {
        return unless -f $_;
        return if m{/\.sft-} || m{/\.siftp};
        (my $rel = $_) =~ s{^\Q$root\E/}{};
        $h{$rel} = Digest::SHA->new(256)->addfile($_)->hexdigest;
    } }, $root);
    return \%h;
}

sub same {
    my ($a, $b) = @_;
    return 0 unless keys %$a == keys %$b;
    for (keys %$a) {
        return 0 unless defined $b->{$_} && $b->{$_} eq $a->{$_};
    }
    return 1;
}

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub lftp {
    my ($host, $cmds) = @_;
    my $script = "set ftp:ssl-allow no; set net:max-retries 1; "
        . "set net:timeout 20; set net:reconnect-interval-base 1; "
        . "set ftp:charset utf-8; set file:charset utf-8; "
        . "set cmd:fail-exit yes; $cmds; quit";
    local $ENV{LC_ALL} = 'C.UTF-8';
    local $ENV{HOME} = $d;
    return system('timeout', '120', 'lftp', '-u', 'alice,pw-a',
        '-e', $script, $host) >> 8;
}

my $want = tree($src);
is(scalar(keys %$want), 300, '300 source digests');

is(lftp("ftp://127.0.0.1:$port", "mirror -R --parallel=4 '$src' up"), 0,
    'lftp mirror -R (upload) exits 0');
ok(same($want, tree("$d/data/alice/up")),
    'uploaded tree byte-identical (sha256), names with spaces and UTF-8');

is(lftp("ftp://127.0.0.1:$port", "mirror --parallel=4 up '$d/down'"), 0,
    'lftp mirror (download) exits 0');
ok(same($want, tree("$d/down")), 'downloaded tree byte-identical');

SKIP: {
    skip 'no IPv6 on ::1', 4 unless $v6;
    my $p6 = port(8022);

    is(lftp("ftp://[::1]:$p6", "mirror -R --parallel=2 '$src' up6"), 0,
        'lftp mirror -R on [::1]');
    ok(same($want, tree("$d/data/alice/up6")), '[::1] upload identical');
    is(lftp("ftp://[::1]:$p6", "mirror up6 '$d/down6'"), 0,
        'lftp mirror on [::1]');
    ok(same($want, tree("$d/down6")), '[::1] download identical');
}

# curl: PASV, EPSV, active, resume, list, quote

my $url = "ftp://alice:pw-a\@127.0.0.1:$port";
system("head -c 3000000 /dev/urandom > $d/data/alice/big.bin") == 0 or die;
my $big = "$d/data/alice/big.bin";

sub sha { Digest::SHA->new(256)->addfile($_[0])->hexdigest }
my $bigsum = sha($big);
sub curl { system('curl', '-s', '-S', '--max-time', '60', @_) >> 8 }

is(curl('--disable-epsv', '-o', "$d/c1", "$url/big.bin"), 0,
    'curl PASV download');
is(sha("$d/c1"), $bigsum, '... identical');
is(curl('-o', "$d/c2", "$url/big.bin"), 0, 'curl EPSV download');
is(sha("$d/c2"), $bigsum, '... identical');
is(curl('-P', '127.0.0.1', '-o', "$d/c3", "$url/big.bin"), 0,
    'curl active (EPRT) download');
is(sha("$d/c3"), $bigsum, '... identical');
is(curl('-P', '127.0.0.1', '--disable-eprt', '-T', $big,
        "$url/c-active.bin"), 0, 'curl active (PORT) upload');
is(sha("$d/data/alice/c-active.bin"), $bigsum, '... identical');

# resume a download from a partial file
system("head -c 300000 $big > $d/c4");
is(curl('-C', '-', '-o', "$d/c4", "$url/big.bin"), 0,
    'curl -C - download resume');
is(sha("$d/c4"), $bigsum, '... identical');

# resume an upload onto a partial file
system("head -c 500000 $big > $d/data/alice/c-up.bin");
is(curl('-C', '-', '-T', $big, "$url/c-up.bin"), 0,
    'curl -C - upload resume');
is(sha("$d/data/alice/c-up.bin"), $bigsum, '... identical');

my $list = `curl -s --max-time 60 '$url/up/h/'`;
like($list, qr/^-rw.* file 6.txt\r?$/m, 'curl LIST of a directory');
my $nlst = `curl -s -l --max-time 60 '$url/up/h/'`;
like($nlst, qr/^file 6.txt\r?$/m, 'curl NLST (-l)');
is(curl('-Q', 'MKD quoted', '-Q', 'RNFR quoted', '-Q', 'RNTO quoted2',
        '-o', '/dev/null', "$url/big.bin"), 0, 'curl -Q commands');
ok(-d "$d/data/alice/quoted2", '... made and renamed a directory');

SKIP: {
    skip 'no IPv6 on ::1', 2 unless $v6;
    my $p6 = port(8022);
    is(curl('-g', '-o', "$d/c6", "ftp://alice:pw-a\@[::1]:$p6/big.bin"),
        0, 'curl download on [::1] (EPSV)');
    is(sha("$d/c6"), $bigsum, '... identical');
}

# ABOR in the middle of a download, then the session goes on

system("head -c 20971520 /dev/urandom > $d/data/alice/huge.bin");
open my $py, '>', "$d/abor.py" or die;
print $py <<"EOF";
import ftplib, hashlib
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=20)
f.login('alice', 'pw-a')
f.voidcmd('TYPE I')
c = f.transfercmd('RETR huge.bin')
got = 0
while got < 1000000:
    d = c.recv(65536)
    if not d:
        break
    got += len(d)
f.putcmd('ABOR')
c.close()
r1 = f.getline()
r2 = f.getline() if r1.startswith('426') else ''
print('abor', r1[:3], r2[:3], got >= 1000000)
print('noop', f.voidcmd('NOOP')[:3])
h = hashlib.sha256()
f.retrbinary('RETR big.bin', h.update)
print('after', h.hexdigest())
print('size', f.size('huge.bin'))
c = f.transfercmd('RETR huge.bin')
c.recv(65536)
c.close()
r1 = f.getline()
f.putcmd('ABOR')
r2 = f.getline()
f.putcmd('ABOR')
r3 = f.getline()
print('late', r1[:3], r2[:3], r3[:3])
f.quit()
EOF
close $py;
my $r = `python3 $d/abor.py 2>&1`;
like($r, qr/^abor (426 226|226 ) True$/m,
    'ABOR mid-download: 426 and 226 (or 226 if it had all been sent)');
like($r, qr/^noop 200$/m, 'the session answers after ABOR');
like($r, qr/^late 426 226 225$/m,
    'ABOR after the close ended the transfer (426): 226; then 225');
like($r, qr/^after $bigsum$/m, 'and downloads a file whole after it');
like($r, qr/^size 20971520$/m, 'and SIZE');

# a passive connection from 127.0.0.2 is refused, the right one works

my $s = ftp_login($port, 'alice', 'pw-a');
ftp_cmd($s, 'TYPE I');
my ($pp) = ftp_cmd($s, 'EPSV') =~ /\(\|\|\|(\d+)\|\)/;

my $thief = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$pp",
    LocalAddr => '127.0.0.2', Timeout => 20);
ok($thief, 'a connection from 127.0.0.2 to the passive port');
my $stolen = '';
if ($thief) {
    sysread($thief, $stolen, 100);
}
is($stolen, '', '... gets nothing and is closed');

my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$pp", Timeout => 20);
like(ftp_cmd($s, 'RETR big.bin'), qr/^150 /, 'RETR');
my $data = '';
while (sysread($dc, $data, 65536, length $data)) { }
like(scalar <$s>, qr/^226 /, 'transfer complete');
is(Digest::SHA->new(256)->add($data)->hexdigest, $bigsum,
    'the control connection\'s address gets the file');
ftp_cmd($s, 'QUIT');

like($t->read_file('error.log'),
    qr/data connection from a different address 127.0.0.2:\d+ refused/,
    'the refusal is logged');

$t->done();
