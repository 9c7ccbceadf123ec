#!/usr/bin/env python3
"""Synthetic developer memories for benchmarks: deterministic, bilingual, varied.

The memories look like what a developer (or their coding agent) would keep:
preferences, decisions, project facts, error -> fix procedures, session episodes and
a little working memory, in English and (about 30%) Chinese. They are assembled from
templates and sampled entities (tools, services, ports, paths, roles, dates, error
messages), with an optional detail clause or two, so that two memories almost never
say the same thing in nearly the same words: near-duplicate merging should rarely fire.

The stream is prefix-stable: ``memories(10_000)`` is the first 10,000 items of
``memories(100_000)`` for the same seed and reference time, which lets the benchmark
snapshot a small database on the way to a large one. Everything is a pure function of
``seed`` and ``now``; ``now`` defaults to the start of the current UTC day, so that
``created_at`` really lies within the last 400 days.

Usage (from the repository root):
  python scripts/synthetic.py [N] [--seed S] [--queries]   # print JSONL samples
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

# Bump when the output for a given seed changes: benchmark caches are keyed on it.
GENERATOR_VERSION = 1

CHINESE_SHARE = 0.3
SPAN_DAYS = 400
MIN_WORDS = 8
MAX_WORDS = 60

# (namespace, weight, services that live there)
NAMESPACES: tuple[tuple[str, float, tuple[str, ...]], ...] = (
    ("webshop", 0.38, ("checkout-web", "cart-service", "billing-api", "catalog-api", "search-indexer",
                       "payment-gateway", "promo-engine", "order-events")),
    ("default", 0.20, ("dotfiles", "homelab", "blog", "notes-sync", "side-project-api")),
    ("infra", 0.16, ("edge-proxy", "k8s-cluster-eu", "ci-runners", "log-shipper", "vault-cluster",
                     "dns-automation", "backup-cron")),
    ("data-pipeline", 0.12, ("ingest-worker", "events-warehouse", "dbt-models", "feature-store",
                             "report-cron", "ml-scoring")),
    ("mobile-app", 0.09, ("ios-app", "android-app", "push-notifier", "mobile-bff", "auth-service")),
    ("docs-site", 0.05, ("docs-site", "api-reference", "changelog-bot")),
)  # fmt: skip

# Tools by what they are for, so that "X over Y" compares like with like.
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "database": ("postgres", "mysql", "sqlite", "clickhouse", "duckdb", "mongodb", "redis", "elasticsearch"),
    "queue": ("kafka", "rabbitmq", "redis streams", "nats", "sqs", "celery", "dramatiq", "temporal"),
    "deploy": ("kubernetes", "helm", "argo cd", "terraform", "ansible", "docker compose", "nomad", "pulumi"),
    "ci": ("github actions", "gitlab ci", "buildkite", "jenkins", "drone", "circleci"),
    "python": ("uv", "poetry", "pip-tools", "pytest", "mypy", "ruff", "black", "tox", "nox", "pre-commit"),
    "web": ("vite", "webpack", "pnpm", "npm", "jest", "vitest", "playwright", "cypress", "eslint", "prettier"),
    "framework": ("fastapi", "django", "flask", "next.js", "react", "sveltekit", "express", "gin", "axum"),
    "observability": ("grafana", "prometheus", "sentry", "datadog", "opentelemetry", "loki", "tempo", "jaeger"),
    "proxy": ("nginx", "traefik", "caddy", "envoy", "haproxy", "cloudflare"),
    "secrets": ("vault", "sops", "doppler", "1password cli", "aws secrets manager"),
    "data": ("airflow", "dagster", "dbt", "spark", "pandas", "polars"),
    "shell": ("tmux", "zsh", "fish", "direnv", "mise", "asdf", "just", "make", "starship"),
}
FORMATTERS = ("ruff format", "black", "prettier", "gofmt", "rustfmt", "eslint --fix", "ktlint", "swiftformat")
EDITORS = ("neovim", "vscode", "helix", "emacs", "zed", "pycharm", "intellij", "sublime text")
LANGUAGES = ("Python", "TypeScript", "Go", "Rust", "Kotlin", "Swift", "SQL", "Bash", "Java", "Ruby")
BRANCHES = ("main", "develop", "release/{v}", "hotfix/{ticket}", "feature/{slug}", "staging")
ENVS = (("dev", "开发"), ("staging", "预发"), ("prod", "生产"), ("qa", "测试"), ("local", "本地"),
        ("canary", "灰度"), ("preview", "预览"), ("eu-prod", "欧洲生产"))  # fmt: skip
DATABASES = ("postgres 15", "postgres 16", "mysql 8", "sqlite", "clickhouse", "mongodb 7", "redis", "duckdb")

AREAS = (
    ("integration tests", "集成测试"), ("local dev databases", "本地开发数据库"), ("background jobs", "后台任务"),
    ("feature flags", "功能开关"), ("schema migrations", "数据库迁移"), ("log shipping", "日志收集"),
    ("frontend state", "前端状态管理"), ("API docs", "接口文档"), ("load testing", "压测"),
    ("secrets", "密钥管理"), ("caching", "缓存"), ("CI caching", "CI 缓存"), ("packaging", "打包"),
    ("code formatting", "代码格式化"), ("dependency pinning", "依赖锁定"), ("metrics dashboards", "监控大盘"),
    ("tracing", "链路追踪"), ("queue consumers", "队列消费者"), ("cron jobs", "定时任务"),
    ("email templates", "邮件模板"), ("image processing", "图片处理"), ("search ranking", "搜索排序"),
    ("auth tokens", "登录令牌"), ("rate limiting", "限流"), ("data backfills", "数据回填"),
    ("release notes", "发布说明"), ("error reporting", "错误上报"), ("config loading", "配置加载"),
    ("retries", "重试策略"), ("pagination", "分页"), ("file uploads", "文件上传"), ("webhooks", "回调"),
)  # fmt: skip

ROLES = (
    ("the backend lead", "后端负责人"), ("the SRE on call", "值班 SRE"), ("our PM", "产品经理"),
    ("the security reviewer", "安全评审"), ("the new intern", "新来的实习生"), ("the data engineer", "数据工程师"),
    ("QA", "测试同学"), ("the frontend dev", "前端同事"), ("the architect", "架构师"), ("the CTO", "CTO"),
    ("the DBA", "DBA"), ("the mobile lead", "移动端负责人"), ("an external contractor", "外包同事"),
    ("the platform team", "平台组"), ("the tech writer", "文档同学"),
)  # fmt: skip

REASONS = (
    ("it is faster on CI", "它在 CI 上更快"),
    ("the team already knows it", "团队都熟悉它"),
    ("its error messages are much clearer", "它的报错信息清楚得多"),
    ("it handles {n}k rows without swapping", "它处理 {n}k 行数据也不会爆内存"),
    ("it keeps the lockfile reproducible", "它能保证 lockfile 可复现"),
    ("{role} asked for it after the {month} incident", "{role}在{month_zh}那次事故后要求的"),
    ("it cut build time from {a} to {b} minutes", "构建时间从 {a} 分钟降到 {b} 分钟"),
    ("the old setup leaked connections under load", "旧方案在高负载下会泄漏连接"),
    ("upgrades are painless", "升级不折腾"),
    ("it works offline on the train", "没网的时候也能用"),
    ("the license is friendlier for the client", "许可证对客户更友好"),
    ("debugging it at 3am was miserable", "半夜排查它太痛苦了"),
    ("memory usage dropped by {p}%", "内存占用降了 {p}%"),
    ("p99 latency went from {a}00ms to {b}0ms", "p99 延迟从 {a}00ms 降到 {b}0ms"),
)  # fmt: skip

ERRORS = (
    "ECONNREFUSED 127.0.0.1:{port}", "OOMKilled", "ModuleNotFoundError: No module named '{module}'",
    "psycopg.OperationalError: too many connections", "CrashLoopBackOff", "x509: certificate has expired",
    "TS2339: Property '{prop}' does not exist on type '{type}'", "deadlock detected", "503 upstream connect error",
    "Permission denied (publickey)", "No space left on device", "ImagePullBackOff", "segmentation fault (core dumped)",
    "ERR max number of clients reached", "TimeoutError after {ms}ms", "Can't locate revision identified by '{hash}'",
    "SSL: CERTIFICATE_VERIFY_FAILED", "npm ERR! ERESOLVE unable to resolve dependency tree",
    "java.lang.OutOfMemoryError: Java heap space", "KeyError: '{prop}'", "429 Too Many Requests",
    "Lock wait timeout exceeded", "context deadline exceeded", "invalid memory address or nil pointer dereference",
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x{hex}", "fatal: refusing to merge unrelated histories",
    "error[E0502]: cannot borrow `{prop}` as mutable", "Hydration failed because the initial UI does not match",
    "pydantic_core.ValidationError: 1 validation error for {type}", "connection reset by peer",
    "disk quota exceeded on /var/lib/{module}", "Too many open files", "DNS resolution failed for {service}.internal",
)  # fmt: skip

SYMPTOMS = (
    ("slow checkout", "下单变慢"), ("memory leak", "内存泄漏"), ("flaky tests", "测试不稳定"),
    ("502s after deploy", "发布后大量 502"), ("stuck queue", "队列积压"), ("missing metrics", "指标缺失"),
    ("duplicate emails", "重复发邮件"), ("login loop", "登录死循环"), ("CPU spike", "CPU 飙高"),
    ("stale cache", "缓存不更新"), ("timezone bug", "时区错误"), ("broken pagination", "分页错乱"),
    ("failed backup", "备份失败"), ("cold start regression", "冷启动变慢"), ("disk filling up", "磁盘被写满"),
)  # fmt: skip

CAUSES = (
    ("a missing index on {table}.{column}", "{table}.{column} 上缺索引"),
    ("an N+1 query in the {module} serializer", "{module} 序列化里有 N+1 查询"),
    ("a connection pool of only {n} for {w} workers", "连接池只有 {n} 个却跑了 {w} 个 worker"),
    ("the retry loop ignoring the backoff header", "重试逻辑忽略了 backoff 头"),
    ("a cron job running twice after the DST change", "夏令时切换后定时任务跑了两次"),
    ("an unbounded in-memory cache in {module}", "{module} 里的内存缓存没有上限"),
    ("a stale DNS entry for {service}", "{service} 的 DNS 记录过期"),
    ("log rotation being disabled on the {env} nodes", "{env} 节点上关闭了日志轮转"),
    ("a race between two consumers on {topic}", "{topic} 上两个消费者竞争"),
    ("a library upgrade ({tool} {v}) changing a default", "{tool} 升级到 {v} 改了默认值"),
    ("the health check hitting the database", "健康检查直接打数据库"),
    ("a float rounding issue in the {module} totals", "{module} 合计里的浮点舍入问题"),
)  # fmt: skip

FIXES = (
    ("raise max_connections to {n} in {path}", "把 {path} 里的 max_connections 调到 {n}"),
    ("pin {tool} to {v} in the lockfile", "在 lockfile 里把 {tool} 固定到 {v}"),
    ("clear the build cache with `{cmd}`", "用 `{cmd}` 清掉构建缓存"),
    ("rotate the certificate with `{cmd}`", "用 `{cmd}` 轮换证书"),
    ("bump the memory limit to {mem}Mi in {path}", "在 {path} 里把内存上限调到 {mem}Mi"),
    ("set {envvar}={val} before starting the service", "启动前设置 {envvar}={val}"),
    ("restart the pod with `kubectl rollout restart deploy/{service}`",
     "用 `kubectl rollout restart deploy/{service}` 重启"),
    ("add the missing index in a migration ({hash})", "在迁移 {hash} 里补上索引"),
    ("delete {path} and regenerate it", "删掉 {path} 再重新生成"),
    ("run `{cmd}` and re-run the failed job", "执行 `{cmd}` 后重跑失败的任务"),
    ("increase the timeout to {ms}ms in {path}", "在 {path} 把超时改成 {ms}ms"),
    ("free space by pruning images with `docker system prune -af`", "用 `docker system prune -af` 清理镜像释放空间"),
    ("re-add the deploy key under repo settings", "在仓库设置里重新添加 deploy key"),
    ("scale the consumer group to {w} replicas", "把消费者扩到 {w} 个副本"),
)  # fmt: skip

VERIFY = (
    ("check `{cmd}` is green", "确认 `{cmd}` 通过"),
    ("watch the {service} dashboard for {n} minutes", "盯 {service} 的大盘 {n} 分钟"),
    ("confirm the error rate is back under {p}%", "确认错误率回到 {p}% 以下"),
    ("tail the logs with `{cmd}`", "用 `{cmd}` 看日志"),
    ("run the smoke test suite against {env}", "在 {env} 上跑一遍冒烟测试"),
)  # fmt: skip

OUTCOMES = (
    ("fixed and deployed", "已修复并上线"), ("rolled back for now", "暂时回滚了"),
    ("worked around, real fix pending", "先绕过去了，根治待定"), ("could not reproduce", "没能复现"),
    ("fixed behind a feature flag", "用功能开关修好了"), ("handed over to {role}", "交给了{role}"),
)  # fmt: skip

FOLLOW_UPS = (
    ("add an alert on {metric}", "给 {metric} 加告警"), ("write a postmortem", "写事故复盘"),
    ("add a regression test in {path}", "在 {path} 加回归测试"), ("update the runbook", "更新运维手册"),
    ("ask {role} to review the {area} design", "请{role}评审{area}方案"),
    ("schedule the {tool} upgrade", "安排 {tool} 升级"), ("clean up the temporary flag {flag}", "清理临时开关 {flag}"),
)  # fmt: skip

DETAILS = (
    ("Ticket {ticket}.", "工单 {ticket}。"),
    ("See commit {hash}.", "见提交 {hash}。"),
    ("Owner: {role}.", "负责人：{role}。"),
    ("Applies to {env} only.", "只在{env}环境生效。"),
    ("Revisit after the {quarter} planning.", "{quarter} 规划后再看。"),
    ("Measured on {n} requests per second.", "按每秒 {n} 个请求测的。"),
    ("Related PR #{pr}.", "相关 PR #{pr}。"),
    ("Documented in {path}.", "写在 {path} 里了。"),
)  # fmt: skip

MODULES = ("billing", "orders", "users", "inventory", "reports", "auth", "search", "payments", "invoices",
           "notifications", "ledger", "pricing", "shipping", "reviews", "sessions", "uploads", "exports")  # fmt: skip
TABLES = ("orders", "users", "line_items", "events", "payments", "sessions", "audit_log", "products", "carts",
          "invoices", "subscriptions", "shipments")  # fmt: skip
COLUMNS = ("user_id", "created_at", "status", "tenant_id", "order_id", "email", "sku", "updated_at", "external_ref")
TOPICS = ("order.created", "payment.settled", "user.signup", "cart.updated", "invoice.sent", "stock.changed")
METRICS = ("queue lag", "p99 latency", "5xx rate", "disk usage", "connection count", "job failures", "heap size")
PROPS = ("userId", "total", "items", "cursor", "token", "locale", "retryCount", "meta", "priceCents", "slug")
TYPES = ("Order", "CartItem", "UserProfile", "Settings", "Invoice", "Payload", "SearchHit", "Session")
ENV_VARS = ("DATABASE_URL", "REDIS_URL", "LOG_LEVEL", "WORKERS", "OTEL_EXPORTER_OTLP_ENDPOINT", "NODE_OPTIONS",
            "PYTHONUNBUFFERED", "FEATURE_NEW_CHECKOUT", "S3_BUCKET", "SENTRY_DSN", "GOMAXPROCS", "TZ")  # fmt: skip
MONTHS = (("January", "1月"), ("February", "2月"), ("March", "3月"), ("April", "4月"), ("May", "5月"),
          ("June", "6月"), ("July", "7月"), ("August", "8月"), ("September", "9月"), ("October", "10月"),
          ("November", "11月"), ("December", "12月"))  # fmt: skip
TICKET_PREFIXES = ("OPS", "PAY", "WEB", "DATA", "MOB", "INFRA", "SEC", "DOC", "CORE", "BUG")
SLUG_WORDS = ("retry", "cache", "login", "export", "cleanup", "upgrade", "perf", "pagination", "sso", "refund",
              "webhook", "i18n", "dark-mode", "csv", "audit", "backfill", "quota", "search")  # fmt: skip

PATH_DIRS = ("src/{module}", "services/{service}", "deploy/helm/{service}", "infra/terraform/modules/{module}",
             ".github/workflows", "config", "scripts", "tests/integration/{module}", "web/src/components",
             "migrations/versions", "docs/runbooks", "ops/ansible/roles/{module}")  # fmt: skip
PATH_FILES = ("settings.py", "values-{env_id}.yaml", "main.tf", "docker-compose.yml", "ci.yml", "Makefile",
              "pyproject.toml", ".env.example", "{hash}_add_{column}.py", "config.toml", "nginx.conf",
              "{module}.ts", "handlers.go", "README.md", "deploy.sh", "Dockerfile", "alerts.yaml")  # fmt: skip
COMMANDS = (
    "make test", "docker compose up -d {service}", "kubectl rollout status deploy/{service}",
    "terraform plan -target=module.{module}", "pytest -k {module} -x", "uv sync --frozen",
    "pnpm install --frozen-lockfile", "alembic upgrade head", "helm upgrade {service} ./chart -f values-{env_id}.yaml",
    "kubectl logs -f deploy/{service} --since=10m", "npm run build", "go test ./... -race", "cargo build --release",
    "just lint", "make migrate ENV={env_id}", "redis-cli -p {port} info clients", "psql -p {port} -c 'select 1'",
    "git bisect run make test", "ansible-playbook site.yml --limit {env_id}", "./scripts/seed_db.sh {env_id}",
)  # fmt: skip

EN_WORD = re.compile(r"[A-Za-z0-9_./:`'#%-]+")
CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


def word_count(text: str) -> int:
    """Words for the length rule: Latin tokens, plus Chinese characters at ~1.7 per word."""
    cjk = len(CJK_CHAR.findall(text))
    return len(EN_WORD.findall(text)) + round(cjk / 1.7)


@dataclass
class _Sampler:
    """Random entities for one memory; every slot a template may use."""

    rng: random.Random
    zh: bool
    services: tuple[str, ...]
    created: datetime

    def __post_init__(self) -> None:
        c = self.created
        self.dates = {
            "date": c.strftime("%Y-%m-%d"),
            "date_zh": f"{c.year}年{c.month}月{c.day}日",
            "weekday": c.strftime("%A"),
        }

    def pick(self, options: tuple[Any, ...]) -> Any:
        # random() is several times cheaper than randrange(), and this runs ~100 times per memory.
        return options[int(self.rng.random() * len(options))]

    def num(self, low: int, high: int) -> int:
        """An integer in [low, high)."""
        return low + int(self.rng.random() * (high - low))

    def pair(self, options: tuple[tuple[str, str], ...]) -> str:
        en, zh = self.pick(options)
        return zh if self.zh else en

    def slots(self) -> dict[str, Any]:
        r = self.rng
        module = self.pick(MODULES)
        service = self.pick(self.services)
        env_id, env_zh = self.pick(ENVS)
        hash_ = f"{r.getrandbits(28):07x}"
        month_index = self.num(0, 12)
        group = TOOL_GROUPS[self.pick(tuple(TOOL_GROUPS))]
        tool_a, tool_b = r.sample(group, 2)
        values: dict[str, Any] = {
            "tool": tool_a,
            "tool_a": tool_a,
            "tool_b": tool_b,
            "queue": self.pick(TOOL_GROUPS["queue"]),
            "obs": self.pick(TOOL_GROUPS["observability"]),
            "secrets": self.pick(TOOL_GROUPS["secrets"]),
            "formatter": self.pick(FORMATTERS),
            "width": self.pick((79, 88, 100, 110, 120, 132)),
            "editor": self.pick(EDITORS),
            "language": self.pick(LANGUAGES),
            "service": service,
            "service2": self.pick(self.services),
            "module": module,
            "env": env_zh if self.zh else env_id,
            "env_id": env_id,
            "db": self.pick(DATABASES),
            "area": self.pair(AREAS),
            "role": self.pair(ROLES),
            "role2": self.pair(ROLES),
            "symptom": self.pair(SYMPTOMS),
            "metric": self.pick(METRICS),
            "port": self.pick((5432, 6379, 8080, 8000, 9092, 3000, 5672, 9200, 443, 8443)) + self.num(0, 40),
            "n": self.num(2, 400),
            "w": self.num(2, 64),
            "a": self.num(6, 40),
            "b": self.num(1, 6),
            "p": self.num(3, 80),
            "ms": self.pick((250, 500, 1000, 1500, 2000, 3000, 5000, 10000, 30000)),
            "mem": self.pick((256, 384, 512, 768, 1024, 1536, 2048, 4096)),
            "v": f"{self.num(0, 9)}.{self.num(0, 30)}.{self.num(0, 12)}",
            "hash": hash_,
            "hex": f"{self.num(128, 256):x}",
            "ticket": f"{self.pick(TICKET_PREFIXES)}-{self.num(100, 9999)}",
            "pr": self.num(40, 6000),
            "table": self.pick(TABLES),
            "column": self.pick(COLUMNS),
            "topic": self.pick(TOPICS),
            "prop": self.pick(PROPS),
            "type": self.pick(TYPES),
            "envvar": self.pick(ENV_VARS),
            "val": self.pick(("1", "0", "true", "debug", "4", "16", "UTC", "--max-old-space-size=4096")),
            "month": MONTHS[month_index][0],
            "month_zh": MONTHS[month_index][1],
            "quarter": f"Q{self.num(1, 5)}",
            "flag": f"ff_{self.pick(SLUG_WORDS).replace('-', '_')}_{self.num(2, 99)}",
            "slug": f"{self.pick(SLUG_WORDS)}-{self.pick(SLUG_WORDS)}",
            **self.dates,
            "minutes": self.num(10, 240),
        }
        values["branch"] = self.pick(BRANCHES).format(**values)
        values["path"] = self.path(values)
        values["cmd"] = self.pick(COMMANDS).format(**values)
        values["error"] = self.pick(ERRORS).format(**values)
        return values

    def fill(self, template: str) -> dict[str, Any]:
        """Slots for one template; each clause gets its own numbers and paths, but one service and env."""
        values = self.slots()
        keep = ("service", "env", "env_id", "role", "tool", "tool_a", "tool_b")
        for name, pool in (("reason", REASONS), ("cause", CAUSES), ("fix", FIXES), ("fix2", FIXES),
                           ("verify", VERIFY), ("outcome", OUTCOMES), ("follow_up", FOLLOW_UPS)):  # fmt: skip
            if "{" + name + "}" not in template:
                continue
            own = {**self.slots(), **{k: values[k] for k in keep}}
            values[name] = self.pair(pool).format(**own)
        return values

    def path(self, values: dict[str, Any]) -> str:
        return f"{self.pick(PATH_DIRS)}/{self.pick(PATH_FILES)}".format(**values)


# -- templates: (memory type, tags, English, Chinese) --------------------------------------
# Tags name the kind; slot-derived tags (service, tool) are added per memory.

Template = tuple[str, str, str, str]

TEMPLATES: dict[str, tuple[Template, ...]] = {
    "preference": (
        ("semantic", "preference",
         "I prefer {tool_a} over {tool_b} for {area} in {service}, because {reason}.",
         "{area}方面我更喜欢用 {tool_a}，不用 {tool_b}，因为{reason}。"),
        ("semantic", "preference",
         "Always run `{cmd}` before pushing to {branch}; {reason}.",
         "推到 {branch} 之前一定先跑 `{cmd}`，{reason}。"),
        ("semantic", "preference",
         "My {language} setup: {editor} with {formatter} on save and a line length of {width}, mostly for {area}.",
         "我的 {language} 开发环境：{editor} 配 {formatter}，保存时自动格式化，行宽 {width}，主要用在{area}上。"),
        ("semantic", "preference",
         "In {language} reviews I ask for small PRs around {area}; over {n} lines gets split, since {reason}.",
         "{language} 代码评审时，{area}相关的 PR 超过 {n} 行就拆开，因为{reason}。"),
        ("semantic", "preference",
         "Keep {envvar} out of {path}; load it from {secrets} instead, {reason}.",
         "不要把 {envvar} 写进 {path}，改从 {secrets} 读取，{reason}。"),
        ("semantic", "preference",
         "For {area} I like to start with a failing test in {path} and only then touch {module} code.",
         "做{area}时我习惯先在 {path} 写一个失败的测试，再改 {module} 的代码。"),
    ),
    "decision": (
        ("semantic", "decision",
         "Decided on {date}: {service} moves {area} from {tool_b} to {tool_a}; {reason}. Signed off by {role}.",
         "{date_zh}决定：{service} 的{area}从 {tool_b} 换成 {tool_a}，{reason}，{role}已同意。"),
        ("semantic", "decision",
         "We will not adopt {tool} for {area} this {quarter}: {role} found that {cause} would still bite us.",
         "这个 {quarter} 不在{area}上引入 {tool}：{role}认为{cause}的问题还会出现。"),
        ("semantic", "decision",
         "Architecture decision for {service}: {topic} events go through {queue}, retries capped at {w}, "
         "dead letters kept {n} days.",
         "{service} 架构决定：{topic} 事件走 {queue}，最多重试 {w} 次，死信保留 {n} 天。"),
        ("semantic", "decision",
         "From {month} on, {service} releases are cut from {branch} every {weekday}; "
         "hotfixes need approval from {role}.",
         "从{month_zh}起，{service} 每周从 {branch} 切版本发布，热修复要{role}批准。"),
        ("semantic", "decision",
         "{service} keeps its own {db} instead of sharing one with {service2}; {reason}.",
         "{service} 单独用一个 {db}，不和 {service2} 共用，{reason}。"),
    ),
    "fact": (
        ("semantic", "project",
         "{service} listens on port {port} in {env}; its config lives in {path}.",
         "{service} 在{env}环境监听 {port} 端口，配置文件在 {path}。"),
        ("semantic", "project",
         "{service} stores {table} in {db}; the pool size is {n} and queries time out after {ms}ms.",
         "{service} 的 {table} 表存在 {db} 里，连接池 {n} 个，查询超时 {ms}ms。"),
        ("semantic", "project",
         "The {module} module of {service} is owned by {role}; {area} changes there need their review.",
         "{service} 的 {module} 模块归{role}管，{area}相关改动要找他们评审。"),
        ("semantic", "project",
         "{service} reads {envvar} at startup; in {env} it is set to {val} through {path}.",
         "{service} 启动时读取 {envvar}，{env}环境里通过 {path} 设成 {val}。"),
        ("semantic", "project",
         "{service} publishes {topic} to {queue} and {service2} consumes it with {w} workers.",
         "{service} 往 {queue} 发 {topic} 消息，{service2} 用 {w} 个 worker 消费。"),
        ("semantic", "project",
         "Dashboards for {service} are in {obs}; the alert on {metric} pages {role} after {minutes} minutes.",
         "{service} 的监控在 {obs} 上，{metric} 告警超过 {minutes} 分钟会呼{role}。"),
    ),
    "procedure": (
        ("procedural", "fix",
         "When {service} fails with `{error}`: {fix}, then {fix2}; finally {verify}.",
         "{service} 报 `{error}` 时：先{fix}，再{fix2}，最后{verify}。"),
        ("procedural", "fix",
         "`{cmd}` on {env} dies with `{error}` because of {cause}. Fix: {fix}.",
         "在{env}跑 `{cmd}` 报 `{error}`，原因是{cause}。解决：{fix}。"),
        ("procedural", "runbook",
         "To deploy {service} to {env}: run `{cmd}`, wait for the rollout, then {verify}. If it fails, {fix}.",
         "{service} 发布到{env}：执行 `{cmd}`，等滚动更新完成，再{verify}；失败的话{fix}。"),
        ("procedural", "fix",
         "Seen `{error}` in {path} after upgrading {tool} to {v}. Workaround: {fix}.",
         "把 {tool} 升级到 {v} 后在 {path} 遇到 `{error}`。临时解决：{fix}。"),
        ("procedural", "runbook",
         "Rotating credentials for {service}: update {envvar} in {secrets}, {fix}, and {verify}.",
         "轮换 {service} 的凭据：在 {secrets} 里更新 {envvar}，{fix}，然后{verify}。"),
    ),
    "episode": (
        ("episodic", "session",
         "On {date} I paired with {role} on the {symptom} in {service}; it turned out to be {cause}. "
         "Outcome: {outcome}. Next: {follow_up}.",
         "{date_zh}和{role}一起排查 {service} 的{symptom}，原来是{cause}。结果：{outcome}。下一步：{follow_up}。"),
        ("episodic", "session",
         "Session {date}: spent {minutes} minutes on {area} for {service}, {outcome}; left a note in {path}.",
         "{date_zh}的会话：在 {service} 的{area}上花了 {minutes} 分钟，{outcome}，备注写在 {path}。"),
        ("episodic", "incident",
         "Incident {date}: {service} in {env} had {symptom} for {minutes} minutes, caused by {cause}; "
         "the fix was to {fix}.",
         "{date_zh}事故：{env}环境的 {service} 出现{symptom}，持续 {minutes} 分钟，原因是{cause}，处理：{fix}。"),
        ("episodic", "session",
         "Talked with {role} about {area} on {date}: they want {tool} in {service}; {role2} worries about {metric}.",
         "{date_zh}和{role}聊了{area}：他们想在 {service} 里用 {tool}，{role2}担心 {metric}。"),
    ),
    "working": (
        ("working", "todo",
         "Currently adding tests for {area} in {service} on branch {branch}; {n} cases left, blocked on {role}.",
         "当前任务：在 {branch} 分支给 {service} 的{area}补测试，还差 {n} 个用例，等{role}回复。"),
        ("working", "todo",
         "Half-way through migrating {service} from {tool_b} to {tool_a}; next step is `{cmd}` on {env}.",
         "{service} 从 {tool_b} 迁到 {tool_a} 做了一半，下一步在{env}执行 `{cmd}`。"),
    ),
}  # fmt: skip

# How often each kind appears, and its importance range.
KINDS: tuple[tuple[str, float, tuple[float, float]], ...] = (
    ("preference", 0.16, (0.45, 0.8)),
    ("decision", 0.16, (0.55, 0.9)),
    ("fact", 0.26, (0.4, 0.75)),
    ("procedure", 0.2, (0.5, 0.85)),
    ("episode", 0.17, (0.15, 0.5)),
    ("working", 0.05, (0.1, 0.35)),
)

QUERY_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("how do we fix {error} in {service}", "{service} 报 {error} 怎么解决"),
    ("which port does {service} use in {env}", "{service} 在{env}用哪个端口"),
    ("why did we move {area} to {tool}", "为什么{area}改用 {tool}"),
    ("what caused the {symptom} in {service}", "{service} 上次{symptom}是什么原因"),
    ("my preferences for {area}", "我在{area}上的习惯"),
    ("where is the config for {service}", "{service} 的配置文件在哪"),
    ("deploy steps for {service} to {env}", "{service} 发布到{env}的步骤"),
    ("who owns the {module} module", "{module} 模块归谁管"),
    ("{tool} setup for {language}", "{language} 的 {tool} 配置"),
    ("what is {envvar} set to in {env}", "{env}环境 {envvar} 设成什么"),
    ("{error}", "{error} 怎么办"),
    ("what did we decide about {area} in {service}", "{service} 的{area}我们是怎么决定的"),
)  # fmt: skip


def _weighted(rng: random.Random, items: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    point = rng.random() * sum(item[1] for item in items)
    for item in items:
        point -= item[1]
        if point < 0:
            return item
    return items[-1]


def default_now() -> datetime:
    """The reference time: the start of the current UTC day."""
    today = datetime.now(UTC).date()
    return datetime(today.year, today.month, today.day, tzinfo=UTC)


def _one(rng: random.Random, now: datetime) -> dict[str, Any]:
    namespace, _, services = _weighted(rng, NAMESPACES)
    kind, _, (low, high) = _weighted(rng, KINDS)
    zh = rng.random() < CHINESE_SHARE
    # Recent days are denser than old ones, as in a real log of work.
    created = now - timedelta(seconds=SPAN_DAYS * 86400 * rng.random() ** 1.4)
    sampler = _Sampler(rng, zh, services, created)
    mtype, kind_tag, en, zh_text = sampler.pick(TEMPLATES[kind])
    template = zh_text if zh else en
    values = sampler.fill(template)
    content = template.format(**values)
    # Extra details make wording and meaning diverge between memories of one template.
    for en_detail, zh_detail in rng.sample(DETAILS, rng.choice((0, 1, 1, 2))):
        own = {**sampler.slots(), "service": values["service"], "env": values["env"]}
        detail = (zh_detail if zh else en_detail).format(**own)
        candidate = content + ("" if zh else " ") + detail
        if word_count(candidate) <= MAX_WORDS:
            content = candidate
    tags = {kind_tag, values["service"]}
    for slot in ("tool", "tool_a"):
        if "{" + slot + "}" in (zh_text if zh else en):
            tags.add(values[slot].replace(" ", "-"))
    if zh:
        tags.add("zh")
    return {
        "content": content,
        "type": mtype,
        "namespace": namespace,
        "tags": sorted(tags),
        "importance": round(low + (high - low) * rng.random(), 2),
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def stream(seed: int = 0, now: datetime | None = None) -> Iterator[dict[str, Any]]:
    """An endless, prefix-stable stream of unique memories."""
    rng = random.Random(f"engram-synthetic-{seed}")
    now = now or default_now()
    seen: set[str] = set()
    while True:
        item = _one(rng, now)
        key = item["content"].casefold()
        words = word_count(item["content"])
        if key in seen or not MIN_WORDS <= words <= MAX_WORDS:
            continue
        seen.add(key)
        yield item


def memories(n: int, seed: int = 0, now: datetime | None = None) -> list[dict[str, Any]]:
    """The first ``n`` memories of the stream for ``seed``: dicts ready for ``Engram.add_many``."""
    return list(islice(stream(seed, now), n))


def queries(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct recall queries (about 30% Chinese) over the same entities as the memories."""
    rng = random.Random(f"engram-queries-{seed}")
    out: list[str] = []
    seen: set[str] = set()
    services = tuple(s for _, _, group in NAMESPACES for s in group)
    while len(out) < n:
        zh = rng.random() < CHINESE_SHARE
        sampler = _Sampler(rng, zh, services, default_now())
        template = sampler.pair(QUERY_TEMPLATES)
        values = sampler.fill(template)
        values["error"] = sampler.pick(ERRORS).format(**values).split(":")[0]
        query = template.format(**values)
        if query not in seen:
            seen.add(query)
            out.append(query)
    return out


def _check(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Facts about a sample, for a quick look: language share, lengths, namespaces."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item["namespace"]] = counts.get(item["namespace"], 0) + 1
    lengths = [word_count(i["content"]) for i in items]
    return {
        "n": len(items),
        "unique": len({i["content"] for i in items}),
        "chinese": round(sum(bool(CJK_CHAR.search(i["content"])) for i in items) / max(1, len(items)), 3),
        "words_min": min(lengths, default=0),
        "words_max": max(lengths, default=0),
        "words_mean": round(sum(lengths) / max(1, len(lengths)), 1),
        "namespaces": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", nargs="?", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", action="store_true", help="print queries instead of memories")
    parser.add_argument("--stats", action="store_true", help="print a summary of N memories instead")
    args = parser.parse_args(argv)
    emit: Callable[[Any], None] = lambda obj: print(json.dumps(obj, ensure_ascii=False))  # noqa: E731
    if args.queries:
        for query in queries(args.n, args.seed):
            emit(query)
    elif args.stats:
        emit(_check(memories(args.n, args.seed)))
    else:
        for item in memories(args.n, args.seed):
            emit(item)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
