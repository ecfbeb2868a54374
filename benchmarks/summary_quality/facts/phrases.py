"""The phrases the fact-retention conversations are written from, per locale."""

from __future__ import annotations

# fmt: off
NAMES = {
    "en": ["Ingrid Halvorsen", "Tomasz Wierzbicki", "Amara Okonkwo", "Henrik Lindqvist",
           "Priya Raghunathan", "Mateo Villanueva", "Sofia Marchetti", "Yusuf Demirci",
           "Declan Whitfield", "Leena Korhonen", "Rafael Andrade", "Chiara Bellucci"],
    "zh": ["韩雪松", "邵静怡", "龚志远", "贺晓岚", "戴文博", "卢思琪",
           "欧阳明华", "司马婉清", "葛振宇", "尹若兰", "柏嘉树", "诸葛明远"],
}
PLACES = {
    "en": ["Trondheim", "Ljubljana", "Bratislava", "Tampere", "Aarhus", "Cluj-Napoca",
           "Thessaloniki", "Brno", "Ghent", "Innsbruck", "Valparaiso", "Porto Alegre"],
    "zh": ["乌鲁木齐", "呼和浩特", "景德镇", "张家界", "泉州", "大理",
           "喀什", "延吉", "丽水", "洛阳", "开封", "桂林"],
}
PERSON_LINES = {
    "en": ["For context, {v} from finance approves anything we spend.",
           "Please address the updates to {v}, who leads this on the client side."],
    "zh": ["补充一下，财务那边负责审批所有开支的是{v}。",
           "进展请汇报给{v}，客户那边由他负责。"],
}
PLACE_LINES = {
    "en": ["We run all of this out of our office in {v}, so local suppliers are best.",
           "The final event takes place in {v}; plan the logistics around that city."],
    "zh": ["我们的办公室在{v}，所以最好找本地的供应商。",
           "最后的活动在{v}举办，后勤请围绕这座城市安排。"],
}
# (sentence, accepted forms, values)
QUANTITIES = {
    "en": [("The equipment we have to move weighs {v} kg in total.",
            ("{v} kg", "{v} kilograms", "{v} kilos"), range(140, 2401)),
           ("Our storage quota on the new plan is {v} GB.", ("{v} GB", "{v} gigabytes"),
            range(300, 4001)),
           ("The venue is {v} km away from the airport.",
            ("{v} km", "{v} kilometres", "{v} kilometers"), range(23, 96)),
           ("The space we rent is {v} m² in total.",
            ("{v} m²", "{v} square metres", "{v} square meters", "{v} sqm"),
            range(85, 641))],
    "zh": [("需要搬运的设备总重 {v} 公斤。", ("{v}公斤", "{v} kg", "{v}千克"),
            range(140, 2401)),
           ("新套餐的存储配额是 {v} GB。", ("{v} GB",), range(300, 4001)),
           ("场地离机场有 {v} 公里。", ("{v}公里", "{v} km", "{v}千米"),
            range(23, 96)),
           ("我们租的场地一共 {v} 平方米。", ("{v}平方米", "{v} m²", "{v}平米"),
            range(85, 641))],
}
DATE_LINES = {
    "en": ["The hard deadline for all of this is {v}.",
           "We go live on {v}, and that date will not move."],
    "zh": ["整件事的最后期限是{v}。", "我们定在{v}正式上线，这个日期不会变。"],
}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
ORDER_LINES = {
    "en": ["My order number is {v}, in case the supplier asks."],
    "zh": ["我的订单号是 {v}，供应商问起时可以用。"],
}
TICKET_LINES = {
    "en": ["Support opened ticket {v} about the outage yesterday."],
    "zh": ["客服昨天为这次故障开了工单 {v}。"],
}
PATH_LINES = {
    "en": ["The file everything is generated from is {v}."],
    "zh": ["所有内容都由 {v} 这个文件生成。"],
}
URL_LINES = {
    "en": ["The status page for the outage is {v} if you want to follow it."],
    "zh": ["故障的状态页面是 {v} ，可以随时查看。"],
}
DECISIONS = {  # (choice, reason)
    "en": [("Hetzner", "GDPR"), ("Stripe", "PCI DSS"), ("Bosch", "10-year warranty"),
           ("Grafana Cloud", "free tier"), ("Caterwise", "vegan menu"),
           ("Backblaze B2", "egress pricing"), ("Scaleway", "ISO 27001")],
    "zh": [("阿里云", "等保三级"), ("顺丰", "冷链"), ("海尔", "十年质保"),
           ("飞书", "免费版"), ("华为云", "国产化"), ("京东物流", "次日达")],
}
DECISION_LINES = {
    "en": ["After comparing the options we decided on {c}, mainly because of {r}.",
           "Decision made: we go with {c}; the deciding factor was {r}."],
    "zh": ["比较之后，我们决定选{c}，主要是因为{r}。",
           "已经定了：用{c}，决定性的因素是{r}。"],
}
CONSTRAINTS = {  # (sentence, accepted forms, values: numbers or terms)
    "en": [("One hard rule from my side: the total budget must stay under {v} EUR.",
            ("{v} EUR", "EUR {v}", "€{v}", "{v}€", "{v} euros"), range(1500, 9001)),
           ("Please keep every meeting shorter than {v} minutes; no exceptions.",
            ("{v} minutes", "{v} min", "{v} mins"), range(20, 56)),
           ("Whatever we pick must not depend on {v}; our IT department forbids it.",
            ("{v}",), ("Oracle", "WhatsApp", "Microsoft Access", "Adobe Flash"))],
    "zh": [("硬性要求：总预算不能超过 {v} 元。", ("{v}元", "¥{v}", "{v} RMB", "{v}块"),
            range(1500, 9001)),
           ("每次会议请控制在 {v} 分钟以内，这一点没有商量余地。", ("{v}分钟",),
            range(20, 56)),
           ("无论选什么，都不能依赖{v}，公司IT部门禁止使用。", ("{v}",),
            ("微信小程序", "甲骨文数据库", "苹果电脑"))],
}
ACKS = {
    "en": ["Noted, I will keep that in mind.", "Got it, thanks for the detail.",
           "Understood. I will plan around it.", "Thanks, that is useful context."],
    "zh": ["好的，我记下了。", "明白了，谢谢说明。", "了解，我会据此安排。",
           "谢谢，这个信息很有用。"],
}
LEAD_INS = {
    "en": ["Thanks, that was useful. ", "Good, let's keep going. ", "One more thing. "],
    "zh": ["谢谢，很有帮助。", "好的，我们继续。", "还有一件事。"],
}
TEST_WORDS = ("refund", "invoice", "ledger", "rounding", "currency", "discount",
              "webhook", "retry", "coupon", "payout")
SCENARIOS = {
    "en": [("moving our web shop to a new host", "the database migration",
            "the DNS cutover", "the backup schedule", "load testing"),
           ("planning the team offsite", "the agenda", "catering", "travel bookings",
            "the budget review"),
           ("renovating the flat", "kitchen tiles", "plumbing quotes",
            "the electrician's visit", "paint colours"),
           ("fixing the billing service", "flaky tests", "the refund flow", "log noise",
            "alerting")],
    "zh": [("把网店迁到新服务器", "数据库迁移", "域名切换", "备份计划", "压力测试"),
           ("策划团队团建", "日程安排", "餐饮", "交通预订", "预算审核"),
           ("装修新房", "厨房瓷砖", "水管报价", "电工上门", "墙面颜色"),
           ("修复计费系统", "不稳定的测试", "退款流程", "日志噪音", "告警配置")],
}
EXCHANGES = {  # (question, answer) about a subject {s}
    "en": [("About {s}: what would you do first?",
            "For {s}, start with the simplest option and measure before changing "
            "more."),
           ("Can you compare two options for {s}? Keep it short, please.",
            "There are two reasonable paths for {s}: the cheaper one now, or the "
            "sturdier one later. I would take the cheaper one and revisit it in a "
            "month."),
           ("I read mixed opinions on {s}. Is it worth the effort?",
            "It is worth it if {s} blocks other work; otherwise keep it small."),
           ("What are the common mistakes with {s}?",
            "The usual mistakes with {s} are skipping the checklist, rushing the last "
            "step and not writing decisions down."),
           ("Could you draft a short checklist for {s}?",
            "A short checklist for {s}: list what exists, pick an owner, agree on a "
            "date, and review the result together."),
           ("Thanks, that helps. Anything else I should know about {s}?",
            "Only that {s} goes faster when one person owns it and reports back.")],
    "zh": [("关于{s}，你会先做什么？",
            "关于{s}，先从最简单的方案开始，改动前先做测量。"),
           ("能比较一下{s}的两个方案吗？简短一点。",
            "{s}有两条合理的路：现在选便宜的，或者以后换更稳妥的。"
            "我建议先选便宜的，一个月后再评估。"),
           ("我看到关于{s}的评价褒贬不一，值得花这个精力吗？",
            "如果{s}卡住了其他工作就值得做，否则保持小规模即可。"),
           ("{s}常见的错误有哪些？",
            "{s}常见的错误是跳过清单、最后一步太仓促，以及没有把决定记下来。"),
           ("能帮我列一个{s}的简短清单吗？",
            "{s}的简短清单：列出现状，指定负责人，约定日期，一起复盘结果。"),
           ("谢谢，很有帮助。关于{s}还有什么要注意的？",
            "只有一点：{s}最好由一个人负责并及时反馈，这样推进得更快。")],
}
INTROS = {
    "en": ("Hi! I need help with {t}. Can we go through it step by step?",
           "Sure, happy to help with {t}. Let's take it one piece at a time."),
    "zh": ("你好！我需要{t}方面的帮助，我们能一步一步来吗？",
           "当然可以，我们一块一块地处理{t}。"),
}
CHATTER_TOOLS = ("web_search", "read_file", "get_weather", "manage_todo_list")
DONE = {
    "en": "I checked it; the details are in the result above. Shall we move on?",
    "zh": "查好了，详细结果见上面。我们继续吗？",
}
# fmt: on
