"""Writes cases.jsonl for the quickstart suite. Deterministic: rerunning it gives the same file.

    python examples/quickstart/make_cases.py

240 cases: four languages (en 80, ko 80, ja 40, es 40) x four categories, so the ko slice is
large enough (80 cases) for a real drop in it to be detectable on its own."""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20261129
PER_CATEGORY = {"en": 20, "ko": 20, "ja": 10, "es": 10}

ARITHMETIC = {
    "en": "What is {a} {op} {b}?",
    "ko": "{a} {op} {b}은(는) 얼마입니까?",
    "ja": "{a} {op} {b} はいくつですか？",
    "es": "¿Cuánto es {a} {op} {b}?",
}
DISCOUNT = {
    "en": "A {item} costs ${price} and is {pct}% off. What is the sale price in dollars?",
    "ko": "정가 ${price}인 {item}을(를) {pct}% 할인하면 판매가는 몇 달러입니까?",
    "ja": "${price} の{item}が {pct}% 引きです。販売価格は何ドルですか？",
    "es": "Un {item} cuesta ${price} y tiene un {pct}% de descuento. ¿Cuál es el precio final en dólares?",
}
ITEMS = {
    "en": ["jacket", "lamp", "bicycle", "camera"],
    "ko": ["재킷", "램프", "자전거", "카메라"],
    "ja": ["ジャケット", "ランプ", "自転車", "カメラ"],
    "es": ["abrigo", "reloj", "televisor", "sofá"],
}
SORT = {
    "en": "Sort these numbers in ascending order: {numbers}",
    "ko": "다음 수를 오름차순으로 정렬하세요: {numbers}",
    "ja": "次の数を小さい順に並べてください: {numbers}",
    "es": "Ordena estos números de menor a mayor: {numbers}",
}
REVERSE = {
    "en": "Write the word '{word}' backwards.",
    "ko": "단어 '{word}'를 거꾸로 쓰세요.",
    "ja": "'{word}' を逆から書いてください。",
    "es": "Escribe la palabra '{word}' al revés.",
}
WORDS = {
    "en": [
        "banana",
        "window",
        "school",
        "library",
        "garden",
        "planet",
        "rocket",
        "pencil",
        "bridge",
        "castle",
        "dragon",
        "forest",
        "guitar",
        "island",
        "kitten",
        "lemon",
        "marble",
        "needle",
        "orange",
        "pepper",
    ],
    "ko": [
        "사과",
        "바나나",
        "학교",
        "컴퓨터",
        "도서관",
        "고양이",
        "강아지",
        "비행기",
        "자동차",
        "병원",
        "우체국",
        "선생님",
        "대학교",
        "지하철",
        "냉장고",
        "텔레비전",
        "운동장",
        "할머니",
        "무지개",
        "해바라기",
    ],
    "ja": [
        "さくら",
        "ともだち",
        "でんしゃ",
        "としょかん",
        "くだもの",
        "ひこうき",
        "たまご",
        "やさい",
        "てがみ",
        "みずうみ",
    ],
    "es": [
        "manzana",
        "ventana",
        "escuela",
        "biblioteca",
        "camino",
        "estrella",
        "montaña",
        "ciudad",
        "pelota",
        "zapato",
    ],
}


def arithmetic(rng: random.Random, lang: str) -> tuple[str, str]:
    op = rng.choice("+-×")
    a, b = rng.randint(10, 99), rng.randint(2, 99)
    value = a + b if op == "+" else a - b if op == "-" else a * b
    return ARITHMETIC[lang].format(a=a, op=op, b=b), str(value)


def discount(rng: random.Random, lang: str) -> tuple[str, str]:
    price, pct = 100 * rng.randint(3, 60), rng.choice([10, 20, 25, 50])
    question = DISCOUNT[lang].format(item=rng.choice(ITEMS[lang]), price=f"{price:,}", pct=pct)
    return question, str(price * (100 - pct) // 100)


def sort(rng: random.Random, lang: str) -> tuple[str, str]:
    numbers = rng.sample(range(1, 100), rng.randint(3, 6))
    question = SORT[lang].format(numbers=", ".join(map(str, numbers)))
    return question, ", ".join(map(str, sorted(numbers)))


def reverse(rng: random.Random, lang: str, index: int) -> tuple[str, str]:
    word = WORDS[lang][index]
    return REVERSE[lang].format(word=word), word[::-1]


def make_cases() -> list[dict]:
    rng = random.Random(SEED)
    cases, questions = [], set()
    for lang, count in PER_CATEGORY.items():
        for category in ("arithmetic", "discount", "sort", "reverse"):
            index = 0
            while index < count:
                if category == "reverse":
                    question, expected = reverse(rng, lang, index)
                else:
                    question, expected = {"arithmetic": arithmetic, "discount": discount, "sort": sort}[category](
                        rng, lang
                    )
                if question in questions:  # the bot is seeded by the question: keep them unique
                    continue
                questions.add(question)
                index += 1
                cases.append(
                    {
                        "id": f"{lang}-{category}-{index:03d}",
                        "input": question,
                        "expected": expected,
                        "tags": {"language": lang, "category": category},
                    }
                )
    return cases


def main() -> None:
    lines = [json.dumps(case, ensure_ascii=False) for case in make_cases()]
    (HERE / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {HERE / 'cases.jsonl'}")


if __name__ == "__main__":
    main()
