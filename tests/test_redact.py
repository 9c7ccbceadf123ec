"""redact: secrets and personal data are found by their real formats, and only those are replaced."""

from __future__ import annotations

from datetime import date
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.lang.redact import (
    CONTACT_KINDS,
    KINDS,
    MARKER_RE,
    Finding,
    card_ok,
    category,
    cn_id_ok,
    find,
    is_placeholder,
    luhn_ok,
    redact,
    redact_data,
    secret_name,
)

# Fake credentials in the published formats. None of them was ever issued.
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2zA4"
GITHUB_PAT = "github_pat_11ABCDEFG0aB3dE5fG7hJ9kL1mN3pQ5r_S7tU9vW1xY2zA4bC6dE8fG0hJ2kL4mN6pQ8rS0tU2vW4xY6zA8bC0dE2fG4h"
GITLAB = "glpat-Xy7Zq2Wv9Tr4Sp6Nm8Lk"
OPENAI = "sk-" + "T3BlbkFJ" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2zA4bC6d"
OPENAI_PROJECT = "sk-proj-" + "Qw3-Er5_Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7"
ANTHROPIC = "sk-ant-api03-" + "Zx8Cv6Bn4Mq2Wl0Ek8Rj6Th4Yg2Uf0Id8Os6Pa4Sd2Fh0Gk8Lz6Xc4Vb2Nm0Qw8Er6Ty4Ui2Op0As8D-AA"
GOOGLE = "AIzaSyD3x9Kq2Lm8Np4Rs6Tu1Vw5Xy7Za0Bc3De"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACB8Zm9vYmFyYmF6cXV4cXV1eHh5enp5enp5enp5enp5enp5enp5AAAAkA==\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
CN_ID = "11010519491231002X"
STRIPE = "sk_live_" + "51Hx8QaLk2Vd9Rt4Yp7Wm3Nz6Bc0Fg1"
STRIPE_RESTRICTED = "rk_test_" + "Zq4Lm8Np2Rs6Tu1Vw5Xy7Ab9"
NPM = "npm_" + "k7Qw2Er9Ty4Ui1Op6As3Df8Gh5Jk0Lz7Xc2V"
HUGGINGFACE = "hf_" + "TqWeRtYuIoPaSdFgHjKlZxCvBnMqWeRtYu"
AZURE_KEY = "Eq8rT4w2Lm9Zx1Cv7Bn3Mk5Jh0Gf6Ds2Aq8Wp4Ry9Tu1Io7Pl3Kj5Hg0Fd6Sa2Zx8Cv4Bn1Mq7We3Rt9Yu5Ip0O+A/b=="
AZURE_SIG = "Kd93hf0Pq%2BzX1vY7mN4bC6dE8fG0hJ2kL4mN6pQ8r%3D"
VISA = "4111 1111 1111 1111"

POSITIVE = [
    ("aws-access-key-id", f"the deploy user key is {AWS_ID} (rotated in May)", AWS_ID),
    ("aws-access-key-id", "temporary creds ASIAY34FZKBOKMUTVV7A expire hourly", "ASIAY34FZKBOKMUTVV7A"),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws-secret-key", f'"SecretAccessKey": "{AWS_SECRET}"', AWS_SECRET),
    ("github-token", f"export GH={GITHUB}", GITHUB),
    ("github-token", f"fine-grained: {GITHUB_PAT}", GITHUB_PAT),
    ("github-token", "app token ghs_" + "Ab1" * 12 + " for the bot", "ghs_" + "Ab1" * 12),
    ("gitlab-token", f"CI uses {GITLAB} to push tags", GITLAB),
    ("openai-key", f"OPENAI key {OPENAI}", OPENAI),
    ("openai-key", f"project key {OPENAI_PROJECT}.", OPENAI_PROJECT),
    ("anthropic-key", f"ANTHROPIC_API_KEY is {ANTHROPIC}", ANTHROPIC),
    ("google-api-key", f"maps key {GOOGLE} restricted to our domain", GOOGLE),
    ("slack-token", f"the bot posts with {SLACK}", SLACK),
    ("jwt", f"session cookie {JWT}", JWT),
    ("private-key", f"deploy key:\n{PRIVATE_KEY}\nkeep it safe", PRIVATE_KEY),
    ("url-password", "DATABASE_URL=postgres://app:Tr0ub4dor@db.internal:5432/app", "Tr0ub4dor"),
    ("url-password", "clone https://bot:p@ss:w0rd@git.example.com/repo.git", "p@ss:w0rd"),
    ("url-password", "REDIS_URL=redis://:n0tguessable@cache:6379/0", "n0tguessable"),
    ("password-assignment", "mysql -u root password=hunter2", "hunter2"),
    ("password-assignment", "mysqldump --password=Sup3r.S3cret db > dump.sql", "Sup3r.S3cret"),
    ("password-assignment", "export GITHUB_TOKEN=abc123def456", "abc123def456"),
    ("password-assignment", "DB_PASSWORD = 'correct horse battery staple'", "correct horse battery staple"),
    ("password-assignment", '{"user": "ada", "password": "s3cr3t!"}', "s3cr3t!"),
    ("password-assignment", "db:\n  passwd: Winter2026!\n  host: localhost", "Winter2026!"),
    ("password-assignment", "client_secret=abc123xyz&grant_type=client_credentials", "abc123xyz"),
    ("password-assignment", "set api_key: 'q8w7e6r5t4'", "q8w7e6r5t4"),
    ("bearer-token", "curl -H 'Authorization: Bearer abc123.def456-ghi789' https://api", "abc123.def456-ghi789"),
    ("card-number", f"card {VISA}, exp 12/29", VISA),
    ("card-number", "amex 3782-822463-10005 on file", "3782-822463-10005"),
    ("card-number", "paid with 5555555555554444.", "5555555555554444"),
    ("cn-id-number", f"身份证 {CN_ID}", CN_ID),
    ("us-ssn", "SSN 078-05-1121 on the W-2", "078-05-1121"),
    # Command lines: the mysql family's glued -p, --password and its kin, sshpass, HTTP clients' user:password.
    ("cli-password", "the nightly backup cron runs mysql -pS3cretPass < prune.sql", "S3cretPass"),
    ("cli-password", "mysqldump -u root -phunter2 shop > shop.sql", "hunter2"),
    ("cli-password", "mariadb -h db -p'Blue s3a' -e 'show tables'", "Blue s3a"),
    ("cli-password", "vault login --password Winter2026 --method=userpass", "Winter2026"),
    ("cli-password", 'openconnect --passwd "Long w0rd" vpn.corp', "Long w0rd"),
    ("cli-password", "wget --http-password Pl4inT3xt https://files.internal/report.csv", "Pl4inT3xt"),
    ("cli-password", "sshpass -p 'Tr1cky pass' ssh -p 22 deploy@bastion", "Tr1cky pass"),
    ("cli-password", "docker exec db mysql \\\n  -u app \\\n  -pC0ntinued", "C0ntinued"),
    ("password-assignment", "PGPASSWORD=Gr33nTea psql -h db -U app", "Gr33nTea"),
    ("basic-auth", "curl -u admin:Pa55word https://api.internal/health", "Pa55word"),
    ("basic-auth", "curl -sS --user 'deploy:two w0rds' https://ci.internal/api", "two w0rds"),
    ("basic-auth", "http -a ada:L0velace POST https://api.internal/notes", "L0velace"),
    ("url-password", "git remote add ci https://bot:Cl0neMe@git.internal/app.git", "Cl0neMe"),
    # Token formats, bare.
    ("stripe-key", f"STRIPE_SECRET_KEY={STRIPE}", STRIPE),
    ("stripe-key", f"the reporting job reads {STRIPE_RESTRICTED} only", STRIPE_RESTRICTED),
    ("npm-token", f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    ("huggingface-token", f"download with {HUGGINGFACE}", HUGGINGFACE),
    (
        "azure-key",
        f"DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        AZURE_KEY,
    ),
    (
        "azure-sas",
        f"https://shopdata.blob.core.windows.net/exports?sv=2022-11-02&sp=r&se=2026-03-01T00:00:00Z&sig={AZURE_SIG}",
        AZURE_SIG,
    ),
    (
        "azure-sas",
        "BlobEndpoint=https://shopdata.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&sig=Zk81yQ",
        "sv=2022-11-02&ss=b&sig=Zk81yQ",
    ),
    # Chinese labels: full-width or ASCII colon, 是/为 or not, a space or not; the value ends its token.
    ("cn-secret", "数据库密码：hunter2", "hunter2"),
    ("cn-secret", "测试环境的密码是 Sp4rrow，别外传", "Sp4rrow"),
    ("cn-secret", "口令是abc123", "abc123"),
    ("cn-secret", "签名密钥: q8w7e6r5t4", "q8w7e6r5t4"),
    ("cn-secret", "访问令牌：tk-93jf82hf；下周过期", "tk-93jf82hf"),
    ("cn-secret", "邮箱授权码是 ABCD-1234-EFGH。", "ABCD-1234-EFGH"),
    ("cn-secret", "舊系統的密碼為S3cret!然後重啟", "S3cret!"),
]

# Found only with contact=True.
CONTACT = [
    ("email", "write to ada.lovelace+engram@analytical-engines.co.uk.", "ada.lovelace+engram@analytical-engines.co.uk"),
    ("email", "联系人：张伟 zhang.wei@shop-data.cn，周一回复", "zhang.wei@shop-data.cn"),
    ("phone", "Berlin office +49 30 1234567 (reception)", "+49 30 1234567"),
    ("phone", "call +1 (415) 555-0100 after 9", "+1 (415) 555-0100"),
    ("phone", "twilio sender +14155550100", "+14155550100"),
    ("phone", "Paris +33 1 42 68 53 00", "+33 1 42 68 53 00"),
    ("phone", "London +44 (0) 20 7946 0958", "+44 (0) 20 7946 0958"),
    ("phone", "手机 138 0013 8000，微信同号", "138 0013 8000"),
    ("phone", "电话13800138000", "13800138000"),
    ("phone", "mobile 139-1234-5678", "139-1234-5678"),
    ("phone", "US desk (415) 555-0100", "(415) 555-0100"),
    ("phone", "fax: 212-555-0199.", "212-555-0199"),
]

NEGATIVE = [
    "md5 9e107d9d372bb6826bd81d3542a419d6, sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "fixed in commit 4f1c2d9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d and 4f1c2d9",
    "request 3f2a9c1e-7d4b-4c1a-9e8f-0a1b2c3d4e5f failed",
    "order 1234567890123456 and 98765432109876543210",  # fail Luhn or too long
    "at 1732890000000 ms, 20261129154438, 2026-11-29T15:44:38.000000Z",
    "upgrade to 2.13.0, then 10.0.19045.3693",
    "password= is empty, password=*** is masked, password=<password> is a template",
    'password=${PASSWORD} and pwd=$DB_PASS and password: null and "password": ""',
    "Keep the token secret: never share it. Token: we rotate them weekly.",
    "the secret to good tests is isolation; tokens are counted per request",
    "already clean: password=[REDACTED:password-assignment] and [REDACTED:github-token]",
    "PWD=/home/ada/src and max_tokens=512 and tokenizer=unigram",
    "if password == expected: return True",
    "pip install sk-learn-pipeline-helpers",
    "the bearer of bad news arrived on time",
    "SSNs 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000 are never issued",
    "ids 110105194912310021 (bad check digit) and 110105194902300021 (no Feb 30)",
    "phone +86 138 0013 8000, zip 94105",
    "see https://docs.example.com:8443/path?q=1 and ssh://git@github.com:22/org/repo",
    # -p is a password only when glued to a mysql-family client; alone it is the prompt.
    "mysql -u root -p shop",
    "ssh -p 22 deploy@bastion && docker run -p 8080:80 -u 1000:1000 nginx",
    "python -p; mkdir -p /tmp/x; git add -p; mysql -P 3306 -h db; ls -pla",
    'mysql -p$MYSQL_PWD shop and mysql -p"$MYSQL_PWD" and --password "$(cat /run/secrets/db)"',
    "sshpass -f ~/.pw ssh -p 22 host; sshpass -e ssh -p 2222 host",
    "psql --password --host db; mysql --no-password shop; --password-file /run/pw",
    "pass --password to the command, or the --password option instead",
    "curl -u admin https://api.internal and curl -u $USER:$TOKEN https://api.internal",
    "curl -u https://api.internal/x",
    # Publishable keys are public; identifiers, masks and templates are not tokens.
    "pk_live_" + "51Hx8QaLk2Vd9Rt4Yp7Wm3Nz6Bc0Fg1 and pk_test_" + "Zq4Lm8Np2Rs6Tu1Vw5Xy7Ab9",
    "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx and sk_test_... and AccountKey=<your-key>",
    "hf_loadPretrainedModelFromHubCache, hf_hub_download, npm_config_registry, npm_package_version",
    "sig=abc and SharedAccessSignature=${SAS}",
    # Prose that only names a password, or says how long it must be.
    "忘记密码了怎么办？密码策略要求12位",
    "密码为8位以上，至少包含数字；密码：6-20 位字母",
    "密码是什么？密码：******，令牌为空时重试，授权码是一次性的",
    "密码学是一门学科，口令和密钥要分开保管",
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_each_format_is_found_and_only_its_value_replaced(kind: str, text: str, secret: str) -> None:
    (finding,) = find(text)
    assert finding.kind == kind
    assert text[finding.start : finding.end] == secret
    assert finding.category == ("personal" if kind in ("card-number", "cn-id-number", "us-ssn") else "secret")
    redacted, findings = redact(text)
    assert findings == [finding]
    assert secret not in redacted
    assert redacted == text[: finding.start] + f"[REDACTED:{kind}]" + text[finding.end :]


def test_every_kind_has_a_case() -> None:
    assert {kind for kind, _, _ in POSITIVE} == set(KINDS)
    assert {kind for kind, _, _ in CONTACT} == set(CONTACT_KINDS)
    assert not set(KINDS) & set(CONTACT_KINDS)
    assert [category(kind) for kind in CONTACT_KINDS] == ["personal", "personal"]
    assert category("cli-password") == category("cn-secret") == "secret"


@pytest.mark.parametrize("text", NEGATIVE)
def test_harmless_text_is_left_alone(text: str) -> None:
    assert find(text) == []
    assert redact(text) == (text, [])


@pytest.mark.parametrize(("kind", "text", "value"), CONTACT, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CONTACT)])
def test_contact_details_are_found_only_when_asked_for(kind: str, text: str, value: str) -> None:
    assert find(text) == []
    (finding,) = find(text, contact=True)
    assert (finding.kind, finding.category) == (kind, "personal")
    assert text[finding.start : finding.end] == value
    redacted, _ = redact(text, contact=True)
    assert redacted == text.replace(value, f"[REDACTED:{kind}]")
    assert redact(redacted, contact=True) == (redacted, [])


CONTACT_NEGATIVE = [
    "released 2026-03-01 at 10:00:00+08:00, build 20260301, 2026/03/01",
    "upgrade to 2.13.0 or 10.0.19045.3693; python@3.11, pkg@1.2.3, node@20",
    "listen on 192.168.100.200:8080, 10.0.0.138 and port 13800",
    "order 1234567890123 and #100234, invoice 123-456-7890, ticket 555-0100",
    "at 1732890000 s and 1732890000000 ms, took 13800138000ms",
    "PT1H30M, +15%, +2026-03-01, +1.2.3, +1 2 3 4 5 6 7 8 9, +100000000000",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "commit 4f1c2d9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d, short 4f1c2d9, build 9e107d9d372bb6826bd81d3542a419d6",
    "request 3f2a9c1e-7d4b-4c1a-9e8f-0a1b2c3d4e5f; SSN-shaped 078-05-1121 is not a phone",
    "git@github.com:org/repo.git, ssh://git@gitlab.com/org/repo, icon@2x.png, logo@3x.svg",
    "you@example.com, ops@corp.test, root@localhost, @types/node, @property, docker.io/nginx@sha256:abc",
    "13800138000123 and 113800138000 and 138 0013 8000 1234 are longer numbers",
    "(911) 555-0100 and 123-555-0100 and 415-155-0100 have no valid area code or exchange",
]


@pytest.mark.parametrize("text", CONTACT_NEGATIVE)
def test_contact_detection_leaves_numbers_and_names_that_are_not_contacts(text: str) -> None:
    assert [text[f.start : f.end] for f in find(text, contact=True) if f.kind in CONTACT_KINDS] == []


@pytest.mark.parametrize("text", [t for t in NEGATIVE if "+86" not in t])
def test_harmless_text_stays_harmless_with_contact_details_on(text: str) -> None:
    assert find(text, contact=True) == []


@pytest.mark.parametrize("text", [t for _, t, _ in POSITIVE])
def test_redaction_is_idempotent(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, [])


@pytest.mark.parametrize(
    ("kind", "token"),
    [("github-token", GITHUB), ("gitlab-token", GITLAB), ("slack-token", SLACK), ("aws-access-key-id", AWS_ID),
     ("stripe-key", STRIPE), ("npm-token", NPM), ("huggingface-token", HUGGINGFACE)],
)  # fmt: skip
def test_a_token_is_found_bare_without_any_label(kind: str, token: str) -> None:
    for text in (token, f"({token})", f"'{token}'", f"新的是{token}，旧的作废"):
        (finding,) = find(text)
        assert (finding.kind, text[finding.start : finding.end]) == (kind, token), text


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("mysqladmin -uroot -pRo0tPw status", "cli-password", "Ro0tPw"),
        ("mariadb-dump --single-transaction -p'Sp ace' shop", "cli-password", "Sp ace"),
        ("/usr/bin/mysql -h 10.0.0.5 -P 3306 -pN0Port", "cli-password", "N0Port"),
        ("unzip -P x; app --pass Hunt3r login", "cli-password", "Hunt3r"),
        ("gpg --batch --passphrase 'long phrase here' -c notes.txt", "cli-password", "long phrase here"),
        ("deploy --db-password 'Q1 w2' --yes", "cli-password", "Q1 w2"),
        ("sshpass -pGlu3d ssh host", "cli-password", "Glu3d"),
        ("sshpass -P assword: -p S3cond ssh host", "cli-password", "S3cond"),
        ("app --password=Sup3r", "password-assignment", "Sup3r"),
        ("app --passwd='two words'", "password-assignment", "two words"),
        ("curl -uadmin:Gl0ed https://x", "basic-auth", "Gl0ed"),
        ("curl --proxy-user squid:Pr0xy -x http://proxy:3128 https://x", "basic-auth", "Pr0xy"),
        ("curl --user=ops:Eq8als https://x", "basic-auth", "Eq8als"),
        ('curl -X POST -H "Accept: application/json" -d @body.json -u "ci:qu0 ted" https://x', "basic-auth", "qu0 ted"),
        ("http --auth=ada:Aut0 GET https://x", "basic-auth", "Aut0"),
        ("wget --user=ops --http-password Wg3t https://x", "cli-password", "Wg3t"),
        ("git clone https://ada:T0ken@git.internal/app.git", "url-password", "T0ken"),
    ],
)
def test_command_line_password_spellings(text: str, kind: str, value: str) -> None:
    (finding,) = find(text)
    assert (finding.kind, text[finding.start : finding.end]) == (kind, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("密码：hunter2", "hunter2"),
        ("密码: hunter2", "hunter2"),
        ("密码 ：hunter2", "hunter2"),
        ("密码：\u3000hunter2", "hunter2"),
        ("密码是hunter2", "hunter2"),
        ("密码是：hunter2", "hunter2"),
        ("密码为 hunter2", "hunter2"),
        ("密码=hunter2", "hunter2"),
        ("密码：hunter2，用户名：ada", "hunter2"),
        ("密码：hunter2。", "hunter2"),
        ("（密码：hunter2）", "hunter2"),
        ("密码：hunter2、口令", "hunter2"),
        ("密码：hunter2然后重启", "hunter2"),
        ("密码是 “hunter2”", "hunter2"),
        ('密码是 "two words"', "two words"),
        ("密码为123456，别告诉别人", "123456"),
        ("私钥：AbC/+d==", "AbC/+d=="),
        ("權杖為 tok_9f8e7d", "tok_9f8e7d"),
    ],
)
def test_chinese_label_spellings(text: str, value: str) -> None:
    (finding,) = find(text)
    assert (finding.kind, text[finding.start : finding.end]) == ("cn-secret", value)


def test_chinese_text_around_secrets() -> None:
    text = f"部署用的密钥是{GITHUB}，数据库密码 password=hunter2，卡号{VISA}。别外传。"
    redacted, findings = redact(text)
    assert [f.kind for f in findings] == ["github-token", "password-assignment", "card-number"]
    assert redacted == (
        "部署用的密钥是[REDACTED:github-token]，数据库密码 password=[REDACTED:password-assignment]，"
        "卡号[REDACTED:card-number]。别外传。"
    )


def test_several_findings_are_sorted_and_do_not_overlap() -> None:
    text = f"token={GITHUB} then Authorization: Bearer {JWT} and {AWS_ID}"
    findings = find(text)
    assert [f.kind for f in findings] == ["github-token", "jwt", "aws-access-key-id"]
    assert all(a.end <= b.start for a, b in pairwise(findings))


def test_a_value_that_runs_into_a_marker_is_cut_there() -> None:
    text = "password=hunter2[REDACTED:github-token]"
    assert find(text) == [Finding("password-assignment", 9, 16, "secret")]
    assert redact(redact(text)[0])[1] == []


def test_a_truncated_private_key_is_still_redacted() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7\nQ2hlY2s=\n"
    (finding,) = find(text)
    assert finding.kind == "private-key" and "MIIEow" in text[finding.start : finding.end]


def test_card_numbers_need_luhn_a_card_prefix_and_13_to_19_digits() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert card_ok("378282246310005") and card_ok("6011111111111117")
    assert not card_ok("4111111111111112")  # Luhn
    assert not card_ok("0000000000000000")  # one digit repeated
    assert not card_ok("1234567812345670")  # Luhn-valid, but no network starts with 1
    assert not card_ok("411111111111")  # 12 digits
    # A card followed by a year is found without the year.
    text = f"{VISA} 2029"
    (finding,) = find(text)
    assert text[finding.start : finding.end] == VISA


def test_cn_ids_need_a_real_birth_date_and_their_check_digit() -> None:
    assert cn_id_ok(CN_ID) and cn_id_ok(CN_ID.lower())
    assert not cn_id_ok("110105194912310021")
    assert not cn_id_ok("11010520991231002X", today=date(2026, 1, 1))  # born in the future


def test_placeholders_and_secret_names() -> None:
    for value in ("", "***", "xxxx", "<password>", "${DB_PASS}", "$DB_PASS", "%s", "{{ token }}", "null", "…"):
        assert is_placeholder(value), value
    assert not is_placeholder("hunter2")
    for name in ("password", "DB_PASSWORD", "client_secret", "x-api-key", "GITHUB_TOKEN", "pwd", "db.pass"):
        assert secret_name(name), name
    for name in ("tokens", "tokenizer", "secretary", "bypass", "keyboard", "compass"):
        assert not secret_name(name), name


def test_redact_data_walks_json_and_redacts_whole_values_under_secret_names() -> None:
    data = {
        "token": "abc",
        "nested": [{"note": f"uses {AWS_ID}"}, {"password": "***"}],
        "count": 3,
        "name": "ada",
    }
    redacted, kinds = redact_data(data)
    assert redacted == {
        "token": "[REDACTED:password-assignment]",
        "nested": [{"note": "uses [REDACTED:aws-access-key-id]"}, {"password": "***"}],
        "count": 3,
        "name": "ada",
    }
    assert sorted(kinds) == ["aws-access-key-id", "password-assignment"]
    assert redact_data(redacted) == (redacted, [])


def test_redact_data_finds_contact_details_only_when_asked_for() -> None:
    data = {"author": "ada@analytical-engines.co.uk", "notes": ["call +49 30 1234567", "mysql -pS3cretPass"]}
    assert redact_data(data) == (
        {"author": "ada@analytical-engines.co.uk", "notes": ["call +49 30 1234567", "mysql -p[REDACTED:cli-password]"]},
        ["cli-password"],
    )
    redacted, kinds = redact_data(data, contact=True)
    assert redacted == {
        "author": "[REDACTED:email]",
        "notes": ["call [REDACTED:phone]", "mysql -p[REDACTED:cli-password]"],
    }
    assert sorted(kinds) == ["cli-password", "email", "phone"]
    assert redact_data(redacted, contact=True) == (redacted, [])


FRAGMENTS = (
    [t for _, t, _ in POSITIVE + CONTACT]
    + NEGATIVE
    + CONTACT_NEGATIVE
    + ["[REDACTED:jwt]", "password=", "://", "@", "-", " ", "\n", "密码", "密码是", "："]
    + ["mysql", " -p", "curl -u a:", "+1 "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=8).map("".join))
def test_redact_never_raises_and_leaves_nothing_to_find(text: str) -> None:
    findings = find(text)
    assert all(0 <= f.start < f.end <= len(text) for f in findings)
    assert all(a.end <= b.start for a, b in pairwise(findings))
    redacted, _ = redact(text)
    assert find(redacted) == []
    assert MARKER_RE.sub("", redacted) == MARKER_RE.sub("", redact(redacted)[0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=8).map("".join))
def test_contact_mode_never_raises_and_leaves_nothing_to_find(text: str) -> None:
    findings = find(text, contact=True)
    assert all(a.end <= b.start for a, b in pairwise(findings))
    redacted, _ = redact(text, contact=True)
    assert find(redacted, contact=True) == []


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_never_crashes(text: str) -> None:
    redacted, _ = redact(text)
    assert find(redacted) == []


@pytest.mark.parametrize(
    "text",
    ["1 " * 50_000 + "x", "a" * 100_000, "password=" * 10_000, "https://a:" + "b" * 100_000, "eyJ" * 30_000,
     "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000, "password: a\n" * 10_000],
    ids=["digit-groups", "letters", "labels", "url", "jwt-prefixes", "key-headers", "yaml"],
)  # fmt: skip
def test_long_hostile_input_is_scanned_in_linear_time(text: str) -> None:
    import time

    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 5


def _repeat(unit: str, size: int = 100_000) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# Inputs shaped to make each new rule's regex backtrack if it could: long runs of what a value
# is made of, and endless prefixes that never complete a match.
HOSTILE = {
    "letters": "a" * 100_000,
    "digits": "1" * 100_000,
    "a-colon": _repeat("a:"),
    "dash-p": _repeat("-p"),
    "cn-label": _repeat("密码"),
    "cn-label-sep": _repeat("密码是 "),
    "cn-label-value": "密码：" + "a" * 100_000,
    "plus-one": _repeat("+1 "),
    "plus-groups": "+" + _repeat("1-"),
    "plus-parens": "+1" + _repeat("(1)"),
    "at": "@" * 100_000,
    "x-at": _repeat("x@"),
    "at-x": _repeat("@x"),
    "email-labels": "a@" + _repeat("a."),
    "email-local": _repeat("a.") + "@",
    "mysql-words": _repeat("mysql "),
    "mysql-prompt": _repeat("mysql -p "),
    "mysql-quote": "mysql -p'" + "a" * 100_000,
    "curl-words": _repeat("curl a:"),
    "curl-continued": _repeat("curl \\\n "),
    "sshpass-options": _repeat("sshpass -f x "),
    "password-flags": _repeat("--password "),
    "flag-prefixes": "--" + _repeat("a-"),
    "stripe-prefix": _repeat("sk_live_"),
    "stripe-body": "sk_live_" + "a" * 100_000 + "_",
    "hf-body": "hf_" + _repeat("aB") + "_",
    "azure-key": "AccountKey=" + "a" * 100_000 + "==_=",
    "sas-escapes": "sig=" + _repeat("%2B") + "%",
    "sas-labels": _repeat("SharedAccessSignature="),
    "cn-mobile": _repeat("138 0013 "),
    "us-phone": _repeat("(415) "),
}


@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_every_rule_runs_in_linear_time_on_hostile_input(text: str) -> None:
    import time

    started = time.perf_counter()
    find(text, contact=True)
    # Linear scans take well under half a second here; a quadratic one takes minutes.
    assert time.perf_counter() - started < 2
