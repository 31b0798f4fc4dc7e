"""Generate the bundled copying data: a short English note about a meeting → "{name} | YYYY-MM-DD".

    python -m training.data.make_meetings             # writes training/data/meetings/{train,validation,test}.jsonl

Each line is one example::

    {"source": "meeting with Ngozi Adeyemi on 3 March 2015", "target": "Ngozi Adeyemi | 2015-03-03",
     "template": "meeting", "name": "Ngozi Adeyemi", "date": "2015-03-03"}

A note is one of the ``TEMPLATES`` with a name and a date in one of the English ``DATE_FORMATS`` ("dd/mm/yyyy" is
the European order); dates are drawn uniformly from 1950-01-01 … 2049-12-31. A name is one given name (two in
one note of ten) and a family name. The given and family names are split, with a seeded shuffle, into disjoint
pools for train, validation and test, and no word (``\\w+``) of one name occurs in another name or in the
templates and dates: a word-level tokenizer trained on the training split has never seen a validation or test
name, so only a model that copies from the source can write them. The same seed always gives the same files,
and no source string occurs in two splits.
"""

import datetime
import random
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path

from training.data.generated import builder_arguments, distinct_splits, jsonl_lines

FIRST_DAY, LAST_DAY = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)
SPLIT_SIZES = {"train": 12000, "validation": 1000, "test": 1000}
POOL_FRACTIONS = {"train": 0.7, "validation": 0.15, "test": 0.15}
TWO_GIVEN_NAMES_RATE = 0.1
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "meetings"

GIVEN_NAMES = """
    Ngozi Chinedu Amara Kwame Kofi Abena Yaw Adwoa Oluwaseun Tunde Folake Chiamaka Emeka Ifeoma Nkechi Obinna
    Uchenna Thandiwe Sipho Lindiwe Themba Nomvula Bongani Zanele Mandla Thabo Palesa Lerato Kagiso Tendai Farai
    Rudo Tatenda Chipo Wanjiru Njeri Kamau Otieno Achieng Baraka Imani Zawadi Juma Neema Abebe Tigist Selam Yonas
    Hiwot Dawit Mekdes Fatoumata Moussa Aminata Ousmane Mariama Kadiatou Seydou Adama Aissatou Kwabena Efua Kojo
    Ayodele Babajide Temitope Adaeze Nnamdi Kelechi Ifeanyi
    Aarav Vivaan Aditya Ananya Priya Rohan Arjun Kavya Ishaan Meera Rahul Sanjay Deepa Lakshmi Suresh Anjali
    Pooja Vikram Nikhil Shreya Tanvi Harpreet Gurpreet Rajesh Sunita Arvind Kiran Nandini Farhan Ayesha Imran
    Nusrat Tahmina Rafiq Sadia Devika Karthik Divya Venkat Lalitha Bhavna Chetan Hemant Jyoti Madhav Nirmala
    Pallavi Sameer Tarun Yamini
    Jing Lei Hui Fang Mei Xiu Ying Hao Jie Qiang Ping Zhen Xin Haruto Yuki Sakura Hiroshi Kenji Akiko Takumi Yui
    Riku Aoi Sora Hina Daichi Naoko Kaito Shota Ayaka Keiko Takeshi Min-seo Ha-eun Jiwoo Seojun Yejin Dohyun
    Sooyoung Linh Thao Huong Quang Tuan Phuong Trang Hieu Khanh Somchai Nattapong Siriporn Arthit Pranee Budi
    Wayan Dewi Agus Rizal Putri Maricel Jericho
    Lukas Sophie Matthias Johanna Felix Greta Henrik Ingrid Lars Astrid Bjorn Sigrid Mikkel Nils Elin Sven Karin
    Pekka Aino Juha Eero Camille Antoine Margaux Julien Amelie Baptiste Celine Mathilde Thibault Elodie Jean-Luc
    Giulia Matteo Chiara Lorenzo Francesca Alessandro Giorgio Federica Paolo Simona Alejandro Lucia Javier Carmen
    Pablo Elena Alvaro Marta Sergio Nuria Iker Ainhoa Joao Ines Tiago Beatriz Leonor Duarte Krzysztof Agnieszka
    Tomasz Katarzyna Piotr Malgorzata Wojciech Zofia Jakub Tereza Ondrej Lenka Dmitri Natalia Sergei Oksana
    Yelena Mikhail Anastasia Taras Olena Bogdan Nikos Eleni Yannis Katerina Siobhan Niamh Ciaran Aoife Eoin
    Declan Gareth Rhiannon Alistair Fiona Hamish Isla Harriet Edmund Rupert Imogen Anne-Marie Daan Sanne Bram
    Femke Joost Lieke Zsofia Bence Levente Reka Ioana Andrei Mihai Bianca Dragan Milica Jelena Emre Elif Mehmet
    Zeynep Burak Ayse
    Mateo Valentina Santiago Camila Diego Ximena Joaquin Renata Emiliano Guadalupe Rodrigo Paola Ignacio Florencia
    Thiago Larissa Gustavo Fernanda Caio Leticia Andres Catalina Esteban Daniela Nicolas Marisol Arturo Yesenia
    Osvaldo Xiomara Wilmer Yadira
    Omar Layla Youssef Fatima Khalid Noor Tariq Salma Hamza Rania Bilal Dalia Karim Yasmin Samir Hala Nabil Amira
    Faisal Huda Walid Mona Ziad Lina Rami Nadia Aisha Mustafa Reem Ibrahim Jamila Adel Ghada Dariush Shirin
    Parisa Kourosh Navid Roya Babak Yael Noam Tamar Eitan Shira Itai
    Aroha Wiremu Mere Sione Losana Aigerim Nursultan Dilnoza Timur Gulnara Bekzod
""".split()

FAMILY_NAMES = """
    Adeyemi Okafor Mensah Boateng Owusu Asante Nkosi Dlamini Mokoena Ndlovu Khumalo Mahlangu Moyo Mutasa Banda
    Phiri Mwangi Kariuki Odhiambo Ochieng Wanjala Kiprono Cheruiyot Tesfaye Bekele Haile Gebremariam Alemu Diallo
    Traore Keita Coulibaly Toure Camara N'Diaye Sesay Kamara Conteh Okonkwo Eze Nwosu Adebayo Balogun Ogunleye
    Afolabi Okello Opoku Darko Agyeman Appiah Amoah Quaye Tetteh
    Sharma Patel Gupta Iyer Nair Reddy Rao Menon Pillai Chatterjee Banerjee Mukherjee Bose Ghosh Joshi Kulkarni
    Deshpande Desai Mehta Shah Kapoor Malhotra Chopra Bhatia Sethi Sandhu Dhillon Grewal Chaudhry Qureshi
    Siddiqui Hussain Rahman Chowdhury Hossain Perera Jayasuriya Wickramasinghe Bandara Thapa Gurung Shrestha
    Verma Agarwal Saxena Trivedi Pandey Mishra Tiwari Yadav Naidu Krishnan Subramanian D'Souza
    Wang Zhang Liu Chen Huang Zhao Zhou Xu Zhu Guo Lin Gao Luo Zheng Liang Xie Tang Feng Deng Cao Peng Zeng Xiao
    Tian Dong Yuan Cai Jiang Sato Suzuki Takahashi Tanaka Watanabe Yamamoto Nakamura Kobayashi Kato Yoshida
    Yamada Sasaki Matsumoto Inoue Kimura Hayashi Shimizu Ikeda Hashimoto Ishikawa Ogawa Fujita Kim Park Choi
    Jung Kang Cho Yoon Jang Shin Kwon Hwang Ahn Baek Nguyen Tran Pham Hoang Phan Bui Ngo Duong Chaiyaporn
    Wongsakul Suwannarat Santos Reyes Bautista Ocampo Santoso Wijaya Hidayat Kusuma Setiawan Nugroho Halim
    Muller Schmidt Schneider Fischer Weber Wagner Becker Hoffmann Richter Neumann Visser Bakker Mulder Dekker
    Johansson Andersson Karlsson Nilsson Eriksson Larsen Hansen Nielsen Pedersen Jensen Haugen Lindqvist Virtanen
    Korhonen Nieminen Makinen Dubois Lefebvre Moreau Laurent Girard Bonnet Dupont Lambert Fontaine Rousseau
    Chevalier Garnier Bianchi Romano Colombo Ricci Marino Greco Gallo Conti Esposito Rizzo Lombardi Moretti
    Barbieri Garcia Fernandez Lopez Martinez Sanchez Perez Jimenez Ruiz Hernandez Diaz Moreno Alvarez Romero
    Navarro Torres Dominguez Vazquez Ramos Serrano Blanco Molina Castro Ortega Delgado Morales Ortiz Rubio Silva
    Oliveira Costa Pereira Almeida Ferreira Rodrigues Carvalho Ribeiro Barbosa Nowak Kowalski Wisniewski Wojcik
    Kowalczyk Kaminski Lewandowski Zielinski Szymanski Wozniak Svoboda Dvorak Cerny Prochazka Ivanov Smirnov
    Kuznetsov Popov Sokolov Lebedev Kozlov Novikov Morozov Volkov Shevchenko Bondarenko Kovalenko Tkachenko
    Melnyk Kravchuk Papadopoulos Georgiou Nikolaidis Pappas Karagiannis O'Brien Murphy Byrne Walsh Doyle
    Gallagher Quinn Smith Jones Williams Taylor Davies Evans Wilson Thomson Roberts Wright Hughes Clarke Turner
    Collins Stewart Campbell MacDonald Fraser Sinclair Bonham-Carter Rhys-Morgan Nagy Kovacs Toth Szabo Horvath
    Varga Farkas Popescu Ionescu Dumitru Munteanu Jovanovic Petrovic Nikolic Kovacevic Babic Yilmaz Kaya Demir
    Sahin Celik Yildiz Aydin Ozturk Arslan Dogan
    Gonzalez Rodriguez Flores Rivera Gutierrez Chavez Vargas Castillo Herrera Medina Aguilar Salazar Cardenas
    Espinoza Quispe Mamani Huaman Condori Mendoza Fonseca-Prado
    Al-Amin El-Masri Haddad Khoury Nasser Mansour Saleh Hamdan Abdullah Aziz Farouk Mahmoud Sayegh Shalhoub Bakri
    Qasim Darwish Bitar Jaber Suleiman Hosseini Ahmadi Mohammadi Rezaei Moradi Jafari Sadeghi Tehrani Cohen
    Mizrahi Peretz Friedman Katz Shapiro Ben-Haim Abdullayev Karimov Rakhimov Tursunov Akhmetov Ngata Parata
    Tuilagi Fifita Taufa
""".split()

TEMPLATES = {
    "meeting": "meeting with {name} on {date}",
    "lunch": "lunch w/ {name}, {date}",
    "call": "{date}: call {name}",
    "remind": "remind me to see {name} on {date}",
    "visits": "{name} visits on {date}",
    "dinner": "dinner with {name} - {date}",
    "appointment": "appointment: {name}, {date}",
    "coffee": "coffee with {name} at 10am on {date}",
    "interview": "interview {name} on {date}",
    "one-on-one": "{date} - 1:1 with {name}",
    "reschedule": "reschedule {name} to {date}",
    "arrives": "{name} arrives {date}",
}

MONTHS = "January February March April May June July August September October November December".split()


def english_ordinal(day: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10 if day // 10 != 1 else 0, "th")


DATE_FORMATS: dict[str, Callable[[datetime.date], str]] = {
    "d month yyyy": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    "month d, yyyy": lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    "d mon yyyy": lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    "mon d, yyyy": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "dd/mm/yyyy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",
    "the dth of month yyyy": lambda d: f"the {d.day}{english_ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",
}


def name_pools(rng: random.Random) -> dict[str, tuple[list[str], list[str]]]:
    """Disjoint (given names, family names) per split: seeded shuffles cut in the ``POOL_FRACTIONS``."""
    cuts = []
    for names in (sorted(GIVEN_NAMES), sorted(FAMILY_NAMES)):
        rng.shuffle(names)
        ends = [round(end * len(names)) for end in accumulate(POOL_FRACTIONS.values())]
        cuts.append([names[start:end] for start, end in zip([0, *ends], ends)])
    return {split: (cuts[0][i], cuts[1][i]) for i, split in enumerate(POOL_FRACTIONS)}


def example(rng: random.Random, given: list[str], family: list[str]) -> dict:
    """One note with a random template, date format, date and name from the given pools."""
    givens = rng.sample(given, 2 if rng.random() < TWO_GIVEN_NAMES_RATE else 1)
    name = " ".join([*givens, rng.choice(family)])
    date = FIRST_DAY + datetime.timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    template = rng.choice(list(TEMPLATES))
    date_text = DATE_FORMATS[rng.choice(list(DATE_FORMATS))](date)
    return {"source": TEMPLATES[template].format(name=name, date=date_text), "target": f"{name} | {date}",
            "template": template, "name": name, "date": date.isoformat()}


def generate_splits(seed: int = 0, sizes: dict[str, int] = SPLIT_SIZES) -> dict[str, list[dict]]:
    """Examples per split, names from the split's pool; a source string seen before is drawn again."""
    rng = random.Random(seed)
    pools = name_pools(rng)
    return distinct_splits(sizes, lambda split: example(rng, *pools[split]))


def main() -> None:
    parser = builder_arguments(__doc__.split("\n")[0], DEFAULT_OUTPUT_DIR)
    args = parser.parse_args()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for split, rows in generate_splits(args.seed).items():
        path = args.output_dir / f"{split}.jsonl"
        path.write_text("".join(jsonl_lines(rows)), encoding="utf-8")
        given = {word for row in rows for word in row["name"].split()[:-1]}
        family = {row["name"].split()[-1] for row in rows}
        print(f"{path}: {len(rows)} examples, {len(given)} given names, {len(family)} family names")


if __name__ == "__main__":
    main()
