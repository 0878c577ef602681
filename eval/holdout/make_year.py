# ruff: noqa: E501  (the data tables hold one memory or query group a line)
"""Write eval/holdout/ja_memory_year_holdout.jsonl: a year of daily use, two people.

A held-out probe file of the year-of-use kind, written for omoide's own checks without
looking at the dev file's memory texts or queries. Each person has hand-written key
memories (the ones the queries are about: lasting facts, events, plans moved or
cancelled, facts that change, a place visited again and again with different people,
two people with one family name, holidays) among several hundred everyday memories made
from templates (seeded, so the file is the same on every run). Memories are written the
way the extractor writes them: 「あなたは…」, an event in the past tense with the relative
day as said and the absolute date in （）, a plan with its date.

    python eval/holdout/make_year.py            # writes the .jsonl next to this file

Queries are hand-written, several spoken variants per group, each with a kind:
direct / time / update / implicit / none (none: expect [] = inject nothing).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("ja_memory_year_holdout.jsonl")
WEEKDAYS = "月火水木金土日"
START = dt.date(2026, 10, 1)


def jdate(day: dt.date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _week_start(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def said_past(event: dt.date, told: dt.date) -> str:
    """How a person names a past day when telling it on `told`, with the date added."""
    gap = (told - event).days
    wd = WEEKDAYS[event.weekday()]
    weeks = (_week_start(told) - _week_start(event)).days // 7
    if gap == 0:
        said = "今日"
    elif gap == 1:
        said = "昨日"
    elif gap == 2:
        said = "一昨日"
    elif weeks == 0:
        said = f"この前の{wd}曜日"
    elif weeks == 1:
        said = f"先週の{wd}曜日"
    elif weeks == 2:
        said = f"先々週の{wd}曜日"
    elif event.month != told.month and (told.month - event.month) % 12 == 1:
        said = f"先月の{event.day}日"
    else:
        said = f"{event.month}月{event.day}日"
    return f"{said}（{jdate(event)}）"


def said_plan(event: dt.date, told: dt.date) -> str:
    """How a person names a coming day when telling it on `told`, with the date added."""
    gap = (event - told).days
    wd = WEEKDAYS[event.weekday()]
    weeks = (_week_start(event) - _week_start(told)).days // 7
    if gap == 0:
        said = "今日"
    elif gap == 1:
        said = "明日"
    elif gap == 2:
        said = "明後日"
    elif weeks == 0:
        said = f"今度の{wd}曜日"
    elif weeks == 1:
        said = f"来週の{wd}曜日"
    elif event.month != told.month and (event.month - told.month) % 12 == 1:
        said = f"来月の{event.day}日"
    else:
        said = f"{event.month}月{event.day}日"
    return f"{said}（{jdate(event)}）"


def d(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


# A key memory: (name, day told, text, event day or None). {when} in the text becomes the
# day as said (past if the event is not after the day told, else a plan's day).
Key = tuple[str, str, str, "str | None"]
# A query group: (group, kind, expected key names, variants).
Group = tuple[str, str, list[str], list[str]]


# ---------------------------------------------------------------- person 1: Sendai
SENDAI_NOW = "2027-09-28T21:30:00+09:00"
SENDAI_KEYS: list[Key] = [
    ("job_old", "2026-10-03", "あなたは仙台市交通局で市営バスの運転手をしていて、主に泉中央と仙台駅を結ぶ路線を走っている。", None),
    ("home", "2026-10-03", "あなたは仙台市泉区の南光台に、妻と娘の三人で住んでいる。", None),
    ("wife", "2026-10-04", "あなたの妻の由美は、市内の歯科医院で歯科衛生士として働いている。", None),
    ("daughter", "2026-10-04", "あなたの娘の美咲は高校2年生で、吹奏楽部でトランペットを吹いている。", None),
    ("coffee_old", "2026-10-05", "あなたは毎朝、出勤前にブラックコーヒーを2杯飲むのが習慣だ。", None),
    ("mother", "2026-10-06", "あなたの母は石巻の実家で一人暮らしをしていて、来年80歳になる。", None),
    ("allergy", "2026-10-08", "あなたは甲殻類アレルギーがあり、エビやカニを食べるとじんましんが出る。", None),
    ("beer_old", "2026-10-09", "あなたは仕事終わりに缶ビールを1本飲むのが一番の楽しみだ。", None),
    ("back", "2026-10-10", "あなたは長年の運転で腰痛持ちで、八乙女の「さくら整骨院」に月に二回通っている。", None),
    ("fishing", "2026-10-11", "あなたの趣味は釣りで、休みの日にはよく海へ出かける。", None),
    ("sato_colleague", "2026-10-15", "あなたの同僚の佐藤剛さんは同じ営業所の運転手で、釣り仲間でもある。", None),
    ("origin", "2026-10-16", "あなたは石巻の出身で、高校を出てから仙台に出てきた。", None),
    ("license", "2026-10-17", "あなたは25歳のときに大型二種免許を取った。", None),
    ("ramen1", "2026-10-18", "あなたは{when}、娘の美咲と泉中央の「麺屋青葉」で味噌ラーメンを食べた。", "2026-10-17"),
    ("sato_neighbor", "2026-10-20", "あなたの家の隣に住む佐藤ふみ子さんは一人暮らしのおばあさんで、よく畑の野菜をおすそ分けしてくれる。", None),
    ("daughter_bday", "2026-10-22", "あなたの娘の美咲の誕生日は7月14日だ。", None),
    ("imoni_2026", "2026-10-25", "あなたは{when}、広瀬川の河原で町内会の芋煮会に参加した。", "2026-10-25"),
    ("team", "2026-10-27", "あなたは楽天イーグルスのファンで、年に何回か球場に応援に行く。", None),
    ("own_bday", "2026-11-02", "あなたの誕生日は3月5日だ。", None),
    ("wife_bday", "2026-11-03", "あなたの妻の由美の誕生日は11月28日だ。", None),
    ("natto", "2026-11-04", "あなたは納豆が苦手で、匂いもだめだ。", None),
    ("fish_sato1", "2026-11-09", "あなたは{when}、佐藤剛さんと閖上漁港でハゼ釣りをした。", "2026-11-08"),
    ("nov_renkyu", "2026-11-23", "あなたは{when}、三連休を使って家族で鳴子温泉に一泊した。", "2026-11-22"),
    ("wife_bday_2026", "2026-11-28", "あなたは{when}、由美の誕生日に秋保のレストランでディナーをごちそうした。", "2026-11-28"),
    ("car_buy", "2026-12-06", "あなたは{when}、中古のホンダ・フリードを120万円で買った。", "2026-12-05"),
    ("daughter_job_old", "2026-12-10", "あなたの娘の美咲は、冬休みから駅前のパン屋でアルバイトを始めた。", None),
    ("tires", "2026-12-13", "あなたは{when}、フリードのタイヤをスタッドレスに履き替えた。", "2026-12-12"),
    ("bonenkai", "2026-12-19", "あなたは{when}、営業所の忘年会で国分町の居酒屋に行った。", "2026-12-18"),
    ("ramen2", "2026-12-20", "あなたは{when}、同僚の佐藤剛さんと「麺屋青葉」に行き、辛味噌ラーメンを食べた。", "2026-12-20"),
    ("xmas_2026", "2026-12-25", "あなたは{when}、クリスマスプレゼントに美咲へワイヤレスイヤホンを贈った。", "2026-12-24"),
    ("osouji_2026", "2026-12-30", "あなたは{when}、家族で家の大掃除をして、換気扇とベランダを磨いた。", "2026-12-30"),
    ("hatsumode_2027", "2027-01-01", "あなたは{when}、大崎八幡宮に初詣に行き、おみくじで大吉を引いた。", "2027-01-01"),
    ("shogatsu_2027", "2027-01-03", "あなたは{when}、家族で石巻の実家に帰り、母の作ったお雑煮を食べた。", "2027-01-02"),
    ("jan_renkyu", "2027-01-11", "あなたは{when}、三連休の最終日に美咲の買い物に付き合って仙台駅前に行った。", "2027-01-11"),
    ("interview", "2027-02-10", "あなたは{when}、高速バス会社「みやぎライナー」の採用面接を受けた。", "2027-02-09"),
    ("kenshin_2027", "2027-02-20", "あなたは{when}、健康診断の結果でγ-GTPが高いと言われた。", "2027-02-19"),
    ("beer_new", "2027-02-22", "あなたは健康診断の結果を受けて、平日はビールをやめてノンアルコールビールにしている。", None),
    ("job_offer", "2027-02-25", "あなたは「みやぎライナー」から採用の連絡をもらい、3月末で仙台市交通局を退職することにした。", None),
    ("ramen3", "2027-03-05", "あなたは{when}、誕生日だったので妻の由美と「麺屋青葉」で特製ラーメンを食べた。", "2027-03-05"),
    ("coffee_new", "2027-03-15", "あなたは胃の調子が悪いので、コーヒーをやめて朝は白湯を飲むようにした。", None),
    ("last_day", "2027-03-31", "あなたは{when}、仙台市交通局での最後の乗務を終え、同僚から花束をもらった。", "2027-03-31"),
    ("job_new", "2027-04-05", "あなたは4月から高速バス会社「みやぎライナー」で運転手として働いていて、仙台と東京を結ぶ夜行便を担当している。", None),
    ("daughter_grade", "2027-04-07", "あなたの娘の美咲は高校3年生になり、東京の音楽大学を目指して受験勉強をしている。", None),
    ("hanami", "2027-04-11", "あなたは{when}、家族で榴岡公園にお花見に行った。", "2027-04-10"),
    ("gw_2027", "2027-05-04", "あなたは{when}、家族で蔵王に行って、御釜を見た。", "2027-05-03"),
    ("fish_sato2", "2027-05-17", "あなたは{when}、佐藤剛さんと松島で釣りをして、アイナメを3匹釣った。", "2027-05-16"),
    ("daughter_job_new", "2027-05-20", "あなたの娘の美咲はパン屋のアルバイトを辞めて、今は近所の本屋でアルバイトをしている。", None),
    ("car_reason", "2027-06-01", "あなたは夜行便の勤務で車に乗る機会が減ったので、車を手放すことにした。", None),
    ("car_sell", "2027-06-13", "あなたは{when}、フリードを買取店に85万円で売った。", "2027-06-12"),
    ("ramen4", "2027-06-20", "あなたは{when}、一人で「麺屋青葉」に寄って、期間限定の冷やし中華を食べた。", "2027-06-20"),
    ("carshare", "2027-07-03", "あなたは車を売ってからは、必要なときだけ近所のカーシェアを使っている。", None),
    ("daughter_bday_2027", "2027-07-14", "あなたは{when}、美咲の17歳の誕生日に家族で焼肉を食べに行った。", "2027-07-14"),
    ("fish_sato3", "2027-07-19", "あなたは{when}、三連休に佐藤剛さんと女川で船釣りをした。", "2027-07-18"),
    ("tanabata", "2027-08-07", "あなたは{when}、由美と仙台七夕まつりの飾りを見に出かけた。", "2027-08-07"),
    ("obon_2027", "2027-08-14", "あなたは{when}、石巻の実家に帰って、父の墓参りをした。", "2027-08-14"),
    ("sato_hospital", "2027-08-23", "あなたは{when}、隣の佐藤ふみ子さんが入院したので、由美とお見舞いに行った。", "2027-08-22"),
    ("kenshin_plan", "2027-08-25", "あなたは{when}に、会社の健康診断を受ける予定だ。", "2027-09-10"),
    ("hakodate_plan", "2027-08-30", "あなたは9月の三連休（2027年9月18日〜20日）に、家族で函館へ旅行する予定だ。", None),
    ("kenshin_moved", "2027-09-06", "あなたは健康診断の日を、9月10日から10月5日（2027年10月5日）に変更した。", None),
    ("ramen5", "2027-09-12", "あなたは{when}、美咲と由美と三人で「麺屋青葉」に行き、つけ麺を食べた。", "2027-09-12"),
    ("hakodate_cancel", "2027-09-15", "あなたは台風が近づいているので、三連休の函館旅行を取りやめた。", None),
    ("mendan", "2027-09-16", "あなたは{when}、美咲の三者面談に行き、音大の推薦入試の話を聞いた。", "2027-09-16"),
    ("sep_renkyu", "2027-09-19", "あなたは{when}、旅行の代わりに家で美咲の受験勉強を見てやった。", "2027-09-19"),
    ("nenmatsu_plan", "2027-09-20", "あなたは年末（2027年12月29日〜31日）に、家族で沖縄へ旅行する予定だ。", None),
    ("imoni_plan", "2027-09-22", "あなたは{when}に、町内会の芋煮会で準備係をする予定だ。", "2027-10-17"),
    ("campus_plan", "2027-09-26", "あなたは{when}に、美咲のオープンキャンパスで東京の音楽大学に一緒に行く予定だ。", "2027-10-02"),
]

SENDAI_QUERIES: list[Group] = [
    # direct: lasting facts (many more than a profile holds) and single events
    ("d1", "direct", ["origin", "mother", "shogatsu_2027", "obon_2027"], ["俺ってどこの出身だっけ", "出身どこって話したっけ…"]),
    ("d2", "direct", ["license"], ["大型二種っていつ取ったんだっけ", "にしゅめんきょ何歳で取ったか覚えてる？"]),
    ("d3", "direct", ["team"], ["俺の好きな球団覚えてる？", "応援してるチームどこだっけ"]),
    ("d4", "direct", ["natto", "allergy"], ["俺が苦手な食べ物ってなんだっけ", "苦手なもの覚えてる？食べ物で"]),
    ("d5", "direct", ["wife"], ["由美って何の仕事してるんだっけ", "かみさんの仕事なんだっけ"]),
    ("d6", "direct", ["sato_neighbor", "sato_hospital"], ["隣の佐藤さんって下の名前なんだっけ", "となりの佐藤さん、なんて名前だったっけ"]),
    ("d7", "direct", ["sato_colleague"], ["佐藤剛さんってどういう人だっけ", "剛さんって職場一緒だったよね"]),
    ("d8", "direct", ["ramen4"], ["青葉で冷やし中華食べたのっていつだっけ", "冷やし中華どこで食べたんだっけ"]),
    ("d9", "direct", ["car_sell"], ["車いくらで売れたんだっけ", "フリード売ったときの値段覚えてる？"]),
    ("d10", "direct", ["wife_bday", "wife_bday_2026"], ["由美の誕生日っていつだっけ", "かみさんの誕生日何日だった？"]),
    # time: named periods in the past tense, relative anchors over repeated events
    ("t1", "time", ["shogatsu_2027", "hatsumode_2027"], ["お正月って何してたっけ", "おしょうがつどこ行ったっけ", "正月は実家帰ったんだっけ"]),
    ("t2", "time", ["gw_2027"], ["ゴールデンウィークどこ行ったっけ", "ごーるでんうぃーくって何したっけ", "GWってどっか出かけたっけ"]),
    ("t3", "time", ["obon_2027"], ["お盆って何してたっけ", "おぼんは石巻帰ったんだっけ？"]),
    ("t4", "time", ["osouji_2026", "bonenkai", "xmas_2026"], ["去年の年末って何してたっけ", "年末はなにしてたっけ…去年の"]),
    ("t5", "time", ["xmas_2026"], ["去年のクリスマス美咲に何あげたっけ", "くりすますプレゼント何あげたんだっけ"]),
    ("t6", "time", ["imoni_2026"], ["去年の芋煮会ってどこでやったっけ", "去年のいもにかい場所どこだった？"]),
    ("t7", "time", ["ramen5"], ["この前青葉行ったの誰とだっけ", "前回青葉行ったとき何食べたっけ", "最後に青葉行ったのいつだっけ"]),
    ("t8", "time", ["ramen1"], ["初めて青葉行ったとき誰と一緒だったっけ", "青葉に最初に行ったのいつだっけ"]),
    ("t9", "time", ["fish_sato3"], ["佐藤さんと最後に釣り行ったのどこだっけ", "この前剛さんと釣り行ったのどこだった？"]),
    ("t10", "time", ["fish_sato1"], ["剛さんと初めて釣り行ったのどこだったっけ"]),
    ("t11", "time", ["mendan"], ["先々週の木曜って何してたっけ", "せんせんしゅうの木曜日なんかあったっけ"]),
    ("t12", "time", ["sato_hospital"], ["先月、誰のお見舞い行ったんだっけ", "先月お見舞い行ったのって何日だっけ"]),
    ("t13", "time", ["sep_renkyu", "hakodate_cancel"], ["この前の連休何してたっけ", "こないだの三連休ってどうしたんだっけ"]),
    ("t14", "time", ["fish_sato3"], ["海の日の連休って何してたっけ"]),
    ("t15", "time", ["hanami"], ["春にお花見行ったっけ", "花見ってどこ行ったんだっけ"]),
    ("t16", "time", ["daughter_bday_2027"], ["美咲の誕生日って何したっけ", "今年の美咲の誕生日どこで食べたっけ"]),
    # update: the current state after a change, and the old one when asked about the past
    ("u1", "update", ["job_new", "job_offer"], ["俺って今どこで働いてるんだっけ", "今の会社なんだっけ"]),
    ("u2", "update", ["job_old", "last_day", "job_offer"], ["前はどこで働いてたんだっけ", "前の職場ってどこだったっけ"]),
    ("u3", "update", ["car_sell", "carshare", "car_reason"], ["今って車持ってたっけ", "うちって車あったっけ"]),
    ("u4", "update", ["car_buy", "car_sell", "tires"], ["前乗ってた車なんだっけ", "前の車の車種覚えてる？"]),
    ("u5", "update", ["coffee_new"], ["朝って何飲んでるんだっけ", "最近朝なに飲んでたっけ"]),
    ("u6", "update", ["coffee_old"], ["前は朝コーヒー何杯飲んでたっけ"]),
    ("u7", "update", ["daughter_job_new"], ["美咲のバイト先どこだっけ", "美咲って今どこでバイトしてる？"]),
    ("u8", "update", ["daughter_job_old", "daughter_job_new"], ["美咲って前はどこでバイトしてたっけ"]),
    ("u9", "update", ["kenshin_moved"], ["健康診断いつだっけ", "けんこうしんだんって何日になったっけ"]),
    ("u10", "update", ["daughter_grade"], ["美咲って今何年生だっけ", "美咲いま高何だっけ"]),
    ("t17", "time", ["nenmatsu_plan"], ["年末どこ行くんだっけ", "今年の年末の予定なんだっけ"]),
    ("t18", "time", ["imoni_plan"], ["今年の芋煮会っていつだっけ", "いもにかい今年は何日？"]),
    # implicit: a remark where a memory changes the answer
    ("i1", "implicit", ["allergy"], ["今夜エビフライにしようかな", "カニ鍋食べたいなあ"]),
    ("i2", "implicit", ["back"], ["最近また腰が痛くてさ…", "なんか腰が重いんだよね"]),
    ("i3", "implicit", ["campus_plan"], ["土曜って東京雨かな", "新幹線の切符取っとかなきゃ"]),
    ("i4", "implicit", ["beer_new", "kenshin_2027"], ["今日ビール飲んじゃおうかな", "平日だけど一杯いっとく？"]),
    ("i5", "implicit", ["sato_neighbor"], ["またきゅうりいっぱいもらっちゃったよ", "お隣からなすもらったんだけど"]),
    ("i6", "implicit", ["mother"], ["そろそろ石巻に電話しないとな", "おふくろ元気かな"]),
    # none: commands with numbers, world questions with だっけ, small talk
    ("n1", "none", [], ["3分タイマーかけて", "タイマー120秒で"]),
    ("n2", "none", [], ["明日5時半に起こして", "アラーム4時50分にセットして"]),
    ("n3", "none", [], ["明日の仙台の天気は？", "週末って雨降るかな"]),
    ("n4", "none", [], ["17かける3は？", "85引く28っていくつ？"]),
    ("n5", "none", [], ["仙台七夕っていつから始まったんだっけ", "伊達政宗って何年生まれだっけ"]),
    ("n6", "none", [], ["日本で一番長い川ってなんだっけ", "富士山って何メートルだっけ"]),
    ("n7", "none", [], ["ありがとう、助かったよ", "おやすみ", "今何時？"]),
    ("n8", "none", [], ["ラーメンの麺ってなんで縮れてるんだっけ", "納豆って体にいいんだっけ"]),
]

# ---------------------------------------------------------------- person 2: Nagoya
NAGOYA_NOW = "2027-09-26T21:00:00+09:00"
NAGOYA_KEYS: list[Key] = [
    ("shop_old", "2026-10-02", "あなたは名古屋の覚王山で「喫茶こもれび」というカフェを一人で営んでいる。", None),
    ("home", "2026-10-02", "あなたは千種区のマンションに、パートナーの拓海と猫のこむぎと暮らしている。", None),
    ("cat", "2026-10-03", "あなたの猫のこむぎは10歳のキジトラのメスで、カリカリよりウェットフードが好きだ。", None),
    ("partner", "2026-10-04", "あなたのパートナーの拓海は、自動車部品メーカーで設計の仕事をしている。", None),
    ("hours_old", "2026-10-05", "あなたの店の定休日は火曜日で、営業は朝8時から夕方6時までだ。", None),
    ("suzuki_regular", "2026-10-07", "あなたの店の常連の鈴木さんは元校長先生で、毎朝モーニングを食べに来る。", None),
    ("suzuki_roaster", "2026-10-08", "あなたはコーヒー豆を、瑞穂区の「鈴木珈琲焙煎所」の鈴木さんから仕入れている。", None),
    ("wine_old", "2026-10-09", "あなたは夜にワインを一杯飲みながら、翌日の仕込みを考えるのが好きだ。", None),
    ("bean_old", "2026-10-10", "あなたが一番好きなコーヒーは、浅煎りのエチオピアだ。", None),
    ("sister", "2026-10-12", "あなたの妹の香織は岐阜市に住んでいて、双子の男の子がいる。", None),
    ("parents", "2026-10-13", "あなたの実家は飛騨高山にあり、両親が小さな旅館をやっている。", None),
    ("kiwi", "2026-10-14", "あなたはキウイを食べると口の中がかゆくなる。", None),
    ("maruhachi1", "2026-10-17", "あなたは{when}、拓海と大須の「うどん処まる八」で味噌煮込みうどんを食べた。", "2026-10-16"),
    ("own_bday", "2026-10-20", "あなたの誕生日は2月11日だ。", None),
    ("partner_bday", "2026-10-21", "あなたのパートナーの拓海の誕生日は6月3日だ。", None),
    ("school", "2026-10-24", "あなたは京都の製菓学校を出て、東京の喫茶店で5年働いてから名古屋に戻った。", None),
    ("dragons", "2026-10-26", "あなたは中日ドラゴンズのファンで、店のラジオでよく試合を流している。", None),
    ("run_first", "2026-11-08", "あなたは{when}、名城公園で初めてジョギングをして、3キロ走った。", "2026-11-07"),
    ("nov_renkyu", "2026-11-23", "あなたは{when}、三連休に拓海と香嵐渓へ紅葉を見に行った。", "2026-11-22"),
    ("run_habit", "2026-12-01", "あなたは週に3回、店を開ける前の朝6時に名城公園を5キロ走っている。", None),
    ("xmas_2026", "2026-12-25", "あなたは{when}、店でクリスマス限定のシュトーレンを40本売り切った。", "2026-12-25"),
    ("maruhachi2", "2026-12-27", "あなたは{when}、妹の香織と双子を連れて「うどん処まる八」に行った。", "2026-12-27"),
    ("nenmatsu_2026", "2026-12-29", "あなたは{when}、年内最後の営業を終えて、店の大掃除をした。", "2026-12-29"),
    ("shogatsu_2027", "2027-01-03", "あなたは{when}、拓海と高山の実家に帰って、両親の旅館を手伝った。", "2027-01-02"),
    ("move_plan", "2027-01-20", "あなたは覚王山の店の建物が取り壊しになるので、3月に店を東区の徳川町へ移すことに決めた。", None),
    ("snow", "2027-01-24", "あなたは{when}、雪で客が少なかったので、店を早めに閉めた。", "2027-01-24"),
    ("race_plan", "2027-02-01", "あなたは{when}に、庄内緑地公園の10キロのレースに出る予定だ。", "2027-03-14"),
    ("own_bday_2027", "2027-02-11", "あなたは{when}、誕生日に拓海からエスプレッソマシンをもらった。", "2027-02-11"),
    ("maruhachi3", "2027-02-19", "あなたは{when}、焙煎所の鈴木さんと新しい豆の打ち合わせをして、帰りに「うどん処まる八」で昼ごはんを食べた。", "2027-02-19"),
    ("race", "2027-03-15", "あなたは{when}、初めての10キロのレースに出て、58分で完走した。", "2027-03-14"),
    ("move_done", "2027-03-22", "あなたは{when}、徳川町の新しい店で「喫茶こもれび」を再オープンした。", "2027-03-21"),
    ("hours_new", "2027-04-01", "あなたの店は今、東区の徳川町にあり、定休日は水曜日に変わった。", None),
    ("hanami", "2027-04-04", "あなたは{when}、拓海と山崎川で夜桜を見た。", "2027-04-03"),
    ("gw_2027", "2027-05-05", "あなたは{when}、店を休んで拓海と伊勢神宮にお参りした。", "2027-05-04"),
    ("maruhachi4", "2027-05-08", "あなたは{when}、一人で「うどん処まる八」に寄って、カレー煮込みうどんを食べた。", "2027-05-08"),
    ("wine_new", "2027-05-12", "あなたは寝つきが悪くなったので、夜のワインをやめてカモミールティーにした。", None),
    ("partner_bday_2027", "2027-06-03", "あなたは{when}、拓海の誕生日に手作りのチーズケーキを焼いた。", "2027-06-03"),
    ("knee", "2027-06-05", "あなたは{when}、膝の痛みで整形外科に行き、しばらく走るのをやめるように言われた。", "2027-06-04"),
    ("run_quit", "2027-06-20", "あなたはランニングをやめて、今は週に2回、市民プールで泳いでいる。", None),
    ("cat_vomit", "2027-06-28", "あなたは{when}、こむぎが二回吐いたので、様子を見ている。", "2027-06-28"),
    ("cat_vet1", "2027-07-03", "あなたは{when}、こむぎを千種の「ひだまり動物病院」に連れて行き、慢性腎臓病と診断された。", "2027-07-02"),
    ("cat_diet", "2027-07-03", "あなたの猫のこむぎは腎臓病のため、療法食のドライフードと一日二回の薬が必要だ。", None),
    ("umi_renkyu", "2027-07-19", "あなたは{when}、三連休の中日で店がとても混んで、かき氷が100杯出た。", "2027-07-18"),
    ("nagashima_plan", "2027-07-25", "あなたは{when}に、香織と双子と長島スパーランドに行く予定だ。", "2027-08-22"),
    ("cat_vet2", "2027-08-08", "あなたは{when}、こむぎの血液検査で動物病院に行き、数値が少し良くなっていた。", "2027-08-07"),
    ("obon_2027", "2027-08-14", "あなたは{when}、店を閉めて郡上八幡で郡上おどりを踊った。", "2027-08-13"),
    ("bean_new", "2027-08-18", "あなたは最近、浅煎りより深煎りのマンデリンの方が好きになった。", None),
    ("nagashima_cancel", "2027-08-20", "あなたは双子が熱を出したので、長島スパーランドに行くのを取りやめた。", None),
    ("maruhachi5", "2027-09-05", "あなたは{when}、拓海のお母さんと「うどん処まる八」で味噌煮込みうどんを食べた。", "2027-09-05"),
    ("fest_plan", "2027-09-06", "あなたは{when}に、東京のコーヒーフェスティバルに店として出店する予定だ。", "2027-10-10"),
    ("cat_vet3", "2027-09-12", "あなたは{when}、こむぎの皮下点滴をしてもらいに動物病院へ行った。", "2027-09-11"),
    ("dentist_plan", "2027-09-13", "あなたは{when}に、歯医者で親知らずを抜く予定だ。", "2027-09-24"),
    ("dentist_moved", "2027-09-21", "あなたは親知らずを抜く日を、9月24日から10月8日（2027年10月8日）に延ばした。", None),
    ("sep_renkyu", "2027-09-20", "あなたは{when}、三連休の最終日に店で初めてラテアートの教室を開いた。", "2027-09-20"),
]

NAGOYA_QUERIES: list[Group] = [
    ("d1", "direct", ["school"], ["私ってどこの製菓学校出たんだっけ", "せいかがっこうどこだったか覚えてる？"]),
    ("d2", "direct", ["dragons"], ["私の好きな球団覚えてる？", "店のラジオで何流してるんだっけ"]),
    ("d3", "direct", ["partner"], ["拓海って何の仕事してるんだっけ", "拓海の会社って何作ってるとこだっけ"]),
    ("d4", "direct", ["suzuki_regular"], ["常連の鈴木さんって前は何してた人だっけ", "鈴木さんって元先生だったよね、常連の"]),
    ("d5", "direct", ["suzuki_roaster"], ["豆ってどこから仕入れてるんだっけ", "焙煎所の鈴木さんってどこにあるんだっけ"]),
    ("d6", "direct", ["sister"], ["香織ってどこ住んでたっけ", "妹って岐阜のどこだっけ"]),
    ("d6b", "direct", ["sister", "maruhachi2", "nagashima_plan", "nagashima_cancel"], ["妹の子どもって何人だっけ"]),
    ("d7", "direct", ["parents", "shogatsu_2027"], ["実家って何やってるんだっけ", "うちの親の旅館どこだっけ"]),
    ("d8", "direct", ["race"], ["10キロのレース何分で走ったんだっけ", "レースのタイム覚えてる？"]),
    ("d9", "direct", ["own_bday_2027"], ["誕生日に拓海から何もらったっけ", "たんじょうびプレゼント何だったっけ"]),
    ("d10", "direct", ["cat"], ["こむぎって何歳だっけ", "こむぎの柄なんだっけ"]),
    ("t1", "time", ["shogatsu_2027"], ["お正月って何してたっけ", "おしょうがつ実家帰ったっけ"]),
    ("t2", "time", ["gw_2027"], ["ゴールデンウィークってどこ行ったっけ", "GW何してたっけ"]),
    ("t3", "time", ["obon_2027"], ["お盆は何してたんだっけ", "おぼん休みどこ行ったっけ"]),
    ("t4", "time", ["xmas_2026"], ["去年のクリスマスってシュトーレン何本売れたっけ", "くりすます何売ったんだっけ去年"]),
    ("t5", "time", ["nenmatsu_2026"], ["去年の年末って何してたっけ", "ねんまつ最後の営業いつだったっけ"]),
    ("t6", "time", ["maruhachi5"], ["この前まる八行ったの誰とだっけ", "最後にまる八行ったのいつだっけ", "前回まる八で何食べたっけ"]),
    ("t7", "time", ["maruhachi1"], ["初めてまる八行ったとき誰と一緒だったっけ", "まる八に最初に行ったのっていつだっけ"]),
    ("t8", "time", ["cat_vet3"], ["この前病院でこむぎ何してもらったんだっけ", "前回の動物病院って何しに行ったっけ"]),
    ("t9", "time", ["cat_vet1"], ["こむぎ初めて病院連れてったのいつだっけ"]),
    ("t10", "time", ["cat_vet3"], ["先々週の土曜って何してたっけ", "せんせんしゅうの土曜日なにしてた？"]),
    ("t11", "time", ["cat_vet2"], ["先月の血液検査の結果どうだったっけ", "せんげつの検査でこむぎの数値どうだった？"]),
    ("t12", "time", ["sep_renkyu"], ["この前の連休って何したっけ", "こないだの三連休どうしてたっけ"]),
    ("t13", "time", ["nov_renkyu"], ["去年の秋って紅葉見に行ったっけ", "紅葉どこで見たんだっけ"]),
    ("t14", "time", ["partner_bday_2027"], ["拓海の誕生日って何したっけ", "拓海のたんじょうび何作ったっけ"]),
    ("t15", "time", ["snow"], ["雪で店早く閉めたのいつだっけ", "冬に早じまいした日あったよね"]),
    ("u1", "update", ["hours_new", "move_done"], ["店って今どこにあるんだっけ", "今の店の場所どこだっけ"]),
    ("u2", "update", ["shop_old", "move_plan"], ["前の店ってどこにあったっけ", "移転する前の店どこだったっけ"]),
    ("u3", "update", ["hours_new"], ["店の定休日って何曜日だっけ", "今の定休日いつだっけ"]),
    ("u4", "update", ["run_quit"], ["最近運動って何してるんだっけ", "今どんな運動してたっけ"]),
    ("u5", "update", ["run_habit"], ["前は何キロ走ってたんだっけ", "走ってたころって週何回だったっけ"]),
    ("u6", "update", ["bean_new"], ["私の好きなコーヒーなんだっけ", "今一番好きな豆ってなんだっけ"]),
    ("u7", "update", ["wine_new"], ["夜って何飲んでるんだっけ", "寝る前に飲んでるのなんだっけ"]),
    ("u8", "update", ["dentist_moved"], ["歯医者いつだっけ", "親知らず抜くの何日だっけ"]),
    ("u9", "update", ["nagashima_cancel"], ["長島っていつ行くんだっけ", "スパーランドの予定どうなったっけ"]),
    ("u10", "update", ["cat_diet"], ["こむぎのごはん何あげてるんだっけ", "こむぎって今何食べてるんだっけ"]),
    ("i1", "implicit", ["cat_diet", "cat_vet1", "cat_vomit"], ["こむぎまた吐いちゃった…", "こむぎが最近すごく水飲むんだよね"]),
    ("i2", "implicit", ["cat_diet", "cat_vet1"], ["こむぎにささみのおやつあげてもいいかな", "こむぎにかつおぶしちょっとあげよっかな"]),
    ("i3", "implicit", ["knee", "run_quit"], ["明日の朝久しぶりに走ろうかな", "また名城公園走りたいなあ"]),
    ("i4", "implicit", ["kiwi"], ["キウイのタルト試作してみようかな", "フルーツサンドにキウイ入れよっか"]),
    ("i5", "implicit", ["fest_plan"], ["来月の東京って寒いかな", "東京出店の荷物そろそろまとめなきゃ"]),
    ("i6", "implicit", ["wine_new"], ["今夜ワイン開けちゃおうかな", "赤ワインもらったんだけど飲もうかな"]),
    ("i7", "implicit", ["suzuki_roaster"], ["豆そろそろ切れそう", "マンデリンの在庫もうないや"]),
    ("n1", "none", [], ["40分タイマーかけて", "タイマー5分で"]),
    ("n2", "none", [], ["明日6時に起こして", "アラーム5時45分でお願い"]),
    ("n3", "none", [], ["明日の名古屋の天気は？", "今日って雨降る？"]),
    ("n4", "none", [], ["58かける3は？", "100割る8っていくつ？"]),
    ("n5", "none", [], ["名古屋城って誰が建てたんだっけ", "味噌煮込みうどんって名古屋発祥だっけ"]),
    ("n6", "none", [], ["日本で一番大きい湖ってなんだっけ", "マラソンって何キロだっけ"]),
    ("n7", "none", [], ["ありがとう", "おやすみー", "ちょっと音楽かけて"]),
    ("n8", "none", [], ["エスプレッソって何気圧で淹れるんだっけ", "猫って何時間寝るんだっけ"]),
]

# ---------------------------------------------------------------- everyday filler
# Everyday memories made from templates, so that the right memory is one among hundreds.
# They avoid the words a person's queries are about (checked below), and no dated filler
# falls on a key event's day or a holiday asked about, so every query keeps its answer.

COMMON_SHOPS = ["ホームセンター", "ドラッグストア", "百円ショップ", "近所のスーパー"]
COMMON_ITEMS = ["電球", "洗剤", "乾電池", "靴下", "延長コード", "爪切り", "折りたたみ傘", "ハンガー",
                "歯ブラシ", "園芸用の土", "手帳", "保冷バッグ", "加湿器のフィルター", "スリッパ",
                "体温計", "入浴剤", "ゴミ袋", "食器用スポンジ", "ボールペン", "ノート"]
COMMON_SHOWS = ["録画していた刑事ドラマ", "温泉の旅番組", "将棋のタイトル戦の中継", "動物のドキュメンタリー",
                "お笑い番組", "昔の西部劇の映画", "大河ドラマ", "歴史の特集番組", "相撲中継", "クイズ番組",
                "深夜のアニメ", "海外のサスペンス映画"]
COMMON_DISHES = ["肉じゃが", "豚汁", "カレーライス", "生姜焼き", "寄せ鍋", "餃子", "焼きそば", "親子丼",
                 "麻婆豆腐", "ハンバーグ", "鮭の塩焼き", "八宝菜", "お好み焼き", "唐揚げ", "冷しゃぶ",
                 "牛丼", "湯豆腐", "ロールキャベツ", "筑前煮", "天津飯"]

FILLER = {
    "sendai": {
        "done": [
            "夕飯に{dish}を食べた", "夕飯に{dish}を作った", "{show}を観た", "{shop}で{item}を買った",
            "{friend}と電話で話した", "{thing}", "{work}",
        ],
        "thing": ["洗濯機から変な音がするのに気づいた", "玄関の電球を替えた", "久しぶりに十時前に寝た",
                  "スマホの画面を割ってしまった", "近所の公園を一時間散歩した", "図書館で時代小説を借りた",
                  "床屋で髪を短くした", "区役所で住民票を取った", "郵便局で荷物を出した",
                  "ベランダの植木に水をやった", "古い写真を整理した", "押し入れの片付けをした",
                  "銀行で通帳を記帳した", "冷蔵庫の中を整理した", "新しいスニーカーを履きおろした",
                  "電気代の明細を見て驚いた", "近所の銭湯に行った", "町内会の回覧板を回した",
                  "物置の棚を組み立てた", "朝から雨戸の修理をした"],
        "work": ["乗務中にお客さんに道を聞かれて案内した", "営業所で安全運転の講習を受けた",
                 "車内で忘れ物の財布を見つけて届けた", "新人運転手の研修を手伝った",
                 "乗務前の点呼で少し待たされた", "休憩室で同僚と将棋を指した",
                 "制服をクリーニングに出した", "渋滞に巻き込まれて、到着が二十分遅れた",
                 "ドライブレコーダーの映像確認に立ち会った", "車内の冷房の効きが悪いと報告した"],
        "friend": ["高校時代の友人の高橋", "従兄弟の健一", "昔の同僚の田中さん", "町内会長の木村さん"],
        "plan": ["床屋に行く", "市役所で手続きをする", "町内会の清掃に出る", "高校の同級生と飲みに行く",
                 "眼科で検診を受ける", "エアコンの修理の人が来る", "銀行で手続きをする"],
        "fact": ["あなたは最近、寝る前にラジオの深夜放送を聴いている。", "あなたは最近、数独にはまっている。",
                 "あなたは冬になるとよく湯たんぽを使う。", "あなたは休みの日の朝、新聞をゆっくり読むのが好きだ。",
                 "あなたは時代小説が好きで、特に藤沢周平をよく読む。", "あなたは演歌をよく聴く。"],
        "avoid": ["青葉", "佐藤", "釣", "コーヒー", "ビール", "美咲", "由美", "腰", "石巻", "東京",
                  "誕生日", "連休", "正月", "お盆", "芋煮", "フリード", "エビ", "カニ", "健康診断"],
    },
    "nagoya": {
        "done": [
            "夕飯に{dish}を作った", "{show}を観た", "{shop}で{item}を買った",
            "{friend}と電話で話した", "{thing}", "{work}", "{work}",
        ],
        "thing": ["大須の古着屋でスカートを買った", "本屋で料理の本を買った", "友達とカラオケに行った",
                  "美容院で髪を切った", "部屋の模様替えをした", "近所のパン屋の新作を食べた",
                  "久しぶりに早く寝た", "図書館で写真集を借りた", "郵便局で荷物を出した",
                  "ベランダのハーブに水をやった", "冷蔵庫の中を整理した", "銭湯でのんびりした",
                  "スマホを機種変更した", "区役所で手続きをした", "洗面所の排水口を掃除した"],
        "work": ["新作のスコーンを試作した", "店のメニュー黒板を書き直した",
                 "いつもより多いモーニングのお客さんをさばいた", "店の観葉植物を植え替えた",
                 "近所の保育園から焼き菓子の注文を受けた", "レジの釣り銭が合わなくて焦った",
                 "店のインスタに新作ケーキの写真を載せた", "食器洗い機が止まって修理を呼んだ",
                 "初めて来たお客さんに道を聞かれた", "店の前の歩道を掃除した", "看板のライトを交換した",
                 "バナナブレッドを焼いた", "プリンを30個仕込んだ", "店のBGMを入れ替えた",
                 "ランチのサンドイッチを売り切った", "牛乳の配達の間違いに対応した"],
        "friend": ["製菓学校の同期の森さん", "東京時代の先輩の小池さん", "叔母の良子さん",
                   "高校の同級生の千尋"],
        "plan": ["美容院に行く", "税理士さんと打ち合わせをする", "店の換気扇の点検がある",
                 "製菓材料の問屋に行く", "友達とランチに行く", "区役所で手続きをする"],
        "fact": ["あなたは最近、韓国ドラマにはまっている。",
                 "あなたは店のBGMにジャズのピアノトリオをかけるのが好きだ。",
                 "あなたは休みの日は昼まで寝てしまうことが多い。", "あなたは雑貨屋めぐりが好きだ。",
                 "あなたは甘いものの中ではあんこが一番好きだ。"],
        "avoid": ["こむぎ", "猫", "鈴木", "まる八", "走", "ワイン", "香織", "拓海", "誕生日", "連休",
                  "キウイ", "正月", "お盆", "動物病院", "歯医者", "定休日"],
    },
}

SENDAI_HOLIDAYS = [("2026-11-21", "2026-11-23"), ("2026-12-24", "2026-12-31"), ("2027-01-01", "2027-01-03"),
                   ("2027-01-09", "2027-01-11"), ("2027-04-29", "2027-05-05"), ("2027-07-17", "2027-07-19"),
                   ("2027-08-13", "2027-08-16"), ("2027-09-18", "2027-09-20")]
NAGOYA_HOLIDAYS = SENDAI_HOLIDAYS


def _days(first: str, last: str) -> list[dt.date]:
    a, b = d(first), d(last)
    return [a + dt.timedelta(days=i) for i in range((b - a).days + 1)]


def _stamp(day: dt.date, rng: random.Random) -> str:
    hour = rng.choice([7, 12, 19, 20, 20, 21, 21, 22])
    return f"{day.isoformat()}T{hour:02d}:{rng.randrange(60):02d}:00+09:00"


def key_memories(keys: list[Key], rng: random.Random) -> list[dict]:
    out = []
    for name, told, text, event in keys:
        told_day = d(told)
        if event is not None:
            ev = d(event)
            when = said_plan(ev, told_day) if ev > told_day else said_past(ev, told_day)
            text = text.replace("{when}", when)
        assert "{" not in text, name
        out.append({"name": name, "text": text, "created_at": _stamp(told_day, rng)})
    return out


def _fill(template: str, spec: dict, rng: random.Random) -> str:
    return template.format(dish=rng.choice(COMMON_DISHES), show=rng.choice(COMMON_SHOWS),
                           shop=rng.choice(COMMON_SHOPS), item=rng.choice(COMMON_ITEMS),
                           friend=rng.choice(spec["friend"]), thing=rng.choice(spec["thing"]),
                           work=rng.choice(spec["work"]))


def filler_memories(person: str, now: dt.date, reserved: set[dt.date], rng: random.Random) -> list[dict]:
    spec = FILLER[person]
    out: list[dict] = []
    day = START
    while day < now:
        for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 2])):
            roll = rng.random()
            if roll < 0.12:
                event = day + dt.timedelta(days=rng.randrange(3, 20))
                if event in reserved or event >= now:
                    continue
                text = f"あなたは{said_plan(event, day)}に、{rng.choice(spec['plan'])}予定だ。"
                told = day
            else:
                event = day - dt.timedelta(days=rng.choice([0, 0, 0, 1, 1, 2]))
                if event in reserved or event < START:
                    continue
                told = day
                text = f"あなたは{said_past(event, told)}、{_fill(rng.choice(spec['done']), spec, rng)}。"
            out.append({"name": None, "text": text, "created_at": _stamp(told, rng)})
        day += dt.timedelta(days=1)
    span = (now - START).days
    for fact in spec["fact"]:
        out.append({"name": None, "text": fact,
                    "created_at": _stamp(START + dt.timedelta(days=rng.randrange(span)), rng)})
    for memory in out:
        bad = [w for w in spec["avoid"] if w in memory["text"]]
        assert not bad, (memory["text"], bad)
    return out


def scenario(sid: str, user: str, person: str, now: str, keys: list[Key], groups: list[Group],
             holidays: list[tuple[str, str]], seed: int) -> dict:
    rng = random.Random(seed)
    now_day = d(now[:10])
    reserved = {d(event) for _, _, _, event in keys if event is not None}
    for first, last in holidays:
        reserved.update(_days(first, last))
    memories = key_memories(keys, rng) + filler_memories(person, now_day, reserved, rng)
    memories.sort(key=lambda m: (m["created_at"], m["text"]))
    ids = {}
    for number, memory in enumerate(memories, 1):
        memory["id"] = f"m{number:03d}"
        if memory["name"]:
            ids[memory["name"]] = memory["id"]
        assert memory["created_at"] < now
    queries = []
    for group, kind, expect, variants in groups:
        for text in variants:
            queries.append({"group": f"{user}-{group}", "text": text,
                            "expect": [ids[name] for name in expect], "kind": kind})
    return {"id": sid, "user": user, "now": now,
            "memories": [{"id": m["id"], "text": m["text"], "created_at": m["created_at"]} for m in memories],
            "queries": queries}


def main() -> None:
    rows = [
        scenario("yh1-sendai-bus", "yhu1", "sendai", SENDAI_NOW, SENDAI_KEYS, SENDAI_QUERIES,
                 SENDAI_HOLIDAYS, seed=2611),
        scenario("yh2-nagoya-cafe", "yhu2", "nagoya", NAGOYA_NOW, NAGOYA_KEYS, NAGOYA_QUERIES,
                 NAGOYA_HOLIDAYS, seed=2612),
    ]
    with OUT.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    for row in rows:
        kinds: dict[str, int] = {}
        for q in row["queries"]:
            kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
        print(row["id"], len(row["memories"]), "memories", len(row["queries"]), "queries", kinds)


if __name__ == "__main__":
    main()
