"""The 90 user-trait dimensions of long-term memory, and offline evidence for them.

MemoryOS keeps user traits as 90 dimensions in three categories (basic needs and personality,
AI alignment, content platform interest tags). The seeds name 51 (shared/traits_51.txt, kept
with their names and categories); the other 39 are ours. Each dimension carries a lexicon of
stems, normalised by `offline.stem` like the keyword sets, so evidence is a set intersection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import WORD, clean_text, normalise_words, stem

BASIC = "basic_needs_personality"
ALIGNMENT = "ai_alignment"
CONTENT = "content_interest"

CATEGORIES: dict[str, str] = {
    BASIC: "Basic needs and personality",
    ALIGNMENT: "AI alignment dimensions",
    CONTENT: "Content platform interest tags",
}


@dataclass(frozen=True)
class TraitDimension:
    key: str
    name: str
    category: str
    description: str
    lexicon: frozenset[str]


@dataclass(frozen=True)
class TraitEvidence:
    """Lexicon hits of one dimension in one text; weight = 1 - 0.5**len(matched)."""

    key: str
    weight: float
    matched: tuple[str, ...]


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _dimension(name: str, category: str, description: str, words: str) -> TraitDimension:
    return TraitDimension(key=_key(name), name=name, category=category, description=description,
                          lexicon=frozenset(stem(word) for word in words.split()))


# (name, description, lexicon words) per category; the seeds' 51 come first in each.
_BASIC = (
    ("Extraversion", "Preference for social activities.",
     "party parties socialize social outgoing crowd gathering meetup hangout club friends mingle "
     "talkative extrovert celebration barbecue networking group"),
    ("Openness", "Willingness to embrace new ideas and experiences.",
     "curious curiosity explore experiment adventure imaginative unconventional perspective diverse "
     "diversity culture abstract philosophy wonder discover discovery novel unusual"),
    ("Agreeableness", "Tendency to be friendly and cooperative.",
     "kindness friendly cooperative cooperate generous supportive forgive trust considerate caring "
     "gentle harmony warm teamwork patient understanding accommodating"),
    ("Conscientiousness", "Responsibility and organizational ability.",
     "organized planning schedule deadline responsible responsibility diligent thorough reliable "
     "punctual disciplined careful prepared checklist routine detail commitment hardworking"),
    ("Neuroticism", "Emotional stability and sensitivity.",
     "anxious anxiety worried worry stressed stress nervous overwhelmed upset panic moody insecure "
     "afraid scared fear overthinking frustrated depressed lonely tense"),
    ("Physiological Needs", "Concern for comfort and basic needs.",
     "sleep sleepy hungry hunger thirsty rest comfort comfortable cold pain sick exhausted nap bed "
     "shower meal ache fatigue"),
    ("Need for Security", "Emphasis on safety and stability.",
     "safe security secure stable stability insurance protect protection emergency guarantee "
     "certainty shelter pension savings lock alarm"),
    ("Need for Belonging", "Desire for group affiliation.",
     "belong belonging community accept acceptance include inclusion connection connected "
     "togetherness welcome tribe membership bond fellowship unity solidarity"),
    ("Need for Self-Esteem", "Need for respect and recognition.",
     "confidence confident respect recognition recognized praise compliment worth worthy esteem "
     "validation admired status reputation dignity pride acknowledged"),
    ("Cognitive Needs", "Desire for knowledge and understanding.",
     "knowledge understand understanding research learn learning explanation theory facts "
     "information insight analyze analysis reasoning concept puzzle"),
    ("Aesthetic Appreciation", "Appreciation for beauty and art.",
     "beauty beautiful aesthetic elegant gorgeous scenery view sunset sunrise color colour "
     "landscape architecture design stunning serene picturesque"),
    ("Self-Actualization", "Pursuit of one's full potential.",
     "potential growth dream purpose passion meaningful fulfill fulfillment fulfilled calling "
     "journey authentic authenticity transform transformation aspire aspiration"),
    ("Need for Order", "Preference for cleanliness and organization.",
     "tidy clean cleaning neat declutter organize order orderly structure system arrange label "
     "sorted minimalist spotless cleanup"),
    ("Need for Autonomy", "Preference for independent decisions and action.",
     "independent independence freedom autonomy decide decision choose choice solo freelance "
     "boundaries entrepreneur liberty"),
    ("Need for Power", "Desire to influence or control others.",
     "lead leader leadership control influence power powerful authority manage manager command "
     "dominate persuade ambition ambitious"),
    ("Need for Achievement", "Value placed on accomplishments.",
     "achieve achievement accomplish accomplishment goal success successful award milestone "
     "progress excel excellence complete finish trophy medal"),
    ("Need for Novelty", "Desire for variety and new experiences over routine.",
     "novelty variety spontaneous spontaneity thrill surprise unexpected fresh boredom bored "
     "monotony switch trend latest"),
    ("Resilience", "Ability to recover from setbacks and keep going.",
     "resilience resilient overcome setback persevere perseverance persistence persistent cope "
     "coping recover recovery survive survivor comeback endure determined determination"),
    ("Optimism", "Expectation that things will turn out well.",
     "optimistic optimism hopeful positive positivity bright upbeat cheerful promising forward "
     "brighter silver"),
    ("Compassion", "Concern for the suffering and feelings of others.",
     "empathy empathetic compassion compassionate sympathy sympathize suffering heartfelt console "
     "solace tender heartbroken"),
    ("Creativity", "Drive to make new things and express ideas.",
     "creative creativity create creation imagine imagination invent invention original "
     "inspiration innovate innovative brainstorm artistic expression"),
    ("Gratitude", "Tendency to notice and value what one has.",
     "grateful gratitude thankful blessed blessing appreciation fortunate lucky cherish treasure "
     "appreciative"),
    ("Competitiveness", "Drive to win and measure oneself against others.",
     "compete competition competitive winning rival rivalry tournament championship race beat "
     "ranking leaderboard victory"),
    ("Work-Life Balance", "Care for rest and leisure beside work.",
     "balance burnout overwork overtime vacation weekend break relax unwind downtime leisure "
     "holiday recharge breather"),
    ("Altruism", "Willingness to give time or resources for others' good.",
     "donate donation charity selfless fundraiser fundraising nonprofit sacrifice serve service "
     "philanthropy generosity giving volunteer"),
    ("Risk Tolerance", "Comfort with uncertainty and bold choices.",
     "risk risky gamble daring bold leap uncertainty venture extreme skydiving bungee dare "
     "fearless chance reckless"),
    ("Need for Play", "Need for light-hearted fun, games and amusement.",
     "playful playtime toy prank silly laugh laughter recreation amusement goofy pastime games"),
    ("Introspection", "Habit of reflecting on one's own thoughts and experiences.",
     "reflect reflection reflective journal journaling introspection ponder contemplate "
     "realization awareness lesson soul diary insight"),
    ("Need for Nurturance", "Need to care for, protect and raise others.",
     "nurture nurturing caregiver caretaking foster adopt adoption raise raising babysit "
     "protective tend mentor"),
)

_ALIGNMENT = (
    ("Helpfulness", "Expects practically useful answers.",
     "useful helpful practical tip tips advice solution solve fix recommendation suggestion guide "
     "resource workaround actionable handy"),
    ("Honesty", "Expects truthful answers.",
     "honest honesty candid frank sincere lie lying lied sugarcoat blunt admit genuine upfront "
     "integrity openly"),
    ("Safety", "Expects avoidance of sensitive or harmful content.",
     "harmful harm dangerous danger offensive inappropriate sensitive trigger warning violence "
     "violent explicit abuse toxic unsafe hazard"),
    ("Instruction Compliance", "Expects strict adherence to instructions.",
     "instruction instructions exactly follow format precisely strictly rule requirement "
     "specified specify comply compliance stick template"),
    ("Truthfulness", "Expects accurate, authentic content.",
     "accurate accuracy factual correct correctness verify verified source evidence "
     "misinformation fake false mistake error citation authentic"),
    ("Coherence", "Expects clear, logically consistent expression.",
     "clear clarity logical logic consistent consistency confusing confused contradiction "
     "contradict coherent sense understandable ramble rambling"),
    ("Complexity", "Prefers detailed, complex information.",
     "detailed depth thorough comprehensive technical nuance nuanced elaborate advanced complex "
     "complexity deep intricate"),
    ("Conciseness", "Prefers brief, clear responses.",
     "brief short concise summary summarize tldr quick point simple bullet shorter succinct "
     "straight minimal"),
    ("Empathy Expectation", "Expects emotional understanding and support from the assistant.",
     "listen listening feelings emotional vent venting comfort hug reassurance reassure validate "
     "heard empathize sympathetic console"),
    ("Transparency", "Expects the assistant to explain its reasoning and its limits.",
     "transparent transparency reasoning explanation why limitation basis disclose disclosure "
     "rationale openness accountable process"),
    ("Personalization", "Expects answers tailored to the user's own situation.",
     "personal personalize personalized tailor tailored custom customize preference individual "
     "unique specific relevant suited"),
    ("Privacy Concern", "Cares what is stored and shared about them.",
     "private privacy data secret confidential tracking delete forget anonymous consent leak "
     "surveillance password"),
    ("Proactivity", "Expects the assistant to anticipate needs and remind them.",
     "remind reminder ahead anticipate proactive notify notification heads nudge alert upcoming "
     "deadline"),
    ("Encouragement", "Expects motivation and cheering on from the assistant.",
     "motivate motivation motivated encourage encouragement cheer cheerleader push pep boost "
     "uplift uplifting rooting"),
    ("Memory Continuity", "Expects the assistant to remember earlier conversations.",
     "remember recall forgot mentioned earlier previously last before told reminded memory "
     "memories"),
    ("Creative Suggestions", "Expects inventive ideas and alternatives, not one stock answer.",
     "brainstorm inspiration idea ideas suggestion suggestions alternative alternatives options "
     "twist inventive spark original"),
    ("Structured Guidance", "Expects step-by-step plans and clear structure.",
     "step steps checklist outline roadmap walkthrough breakdown procedure stage phase sequence "
     "structured framework"),
    ("Neutrality", "Expects balanced, unbiased answers on contested matters.",
     "neutral neutrality balanced unbiased bias biased objective objectivity fair fairness sides "
     "judgmental impartial opinion"),
    ("Politeness", "Expects a courteous, respectful tone.",
     "polite politeness rude rudeness courteous courtesy respectful manners tone gentle tactful "
     "harsh disrespectful"),
)

_CONTENT = (
    ("Science Interest", "Interest in science, research and discovery.",
     "science scientist research experiment physics chemistry biology astronomy space planet lab "
     "discovery theory quantum evolution"),
    ("Education Interest", "Interest in schooling, courses and learning.",
     "school education class course degree college university teacher student studying exam "
     "homework lecture graduate graduation tutor scholarship edu"),
    ("Psychology Interest", "Interest in the mind, behaviour and mental health.",
     "psychology psychologist mental therapy therapist counseling counselor mindset emotions "
     "behavior brain trauma depression cognitive wellbeing mindfulness"),
    ("Family Concern", "Attention to family members and family life.",
     "family kids children child son daughter mom mother dad father parents wife husband sister "
     "brother grandma grandpa baby siblings cousin"),
    ("Fashion Interest", "Interest in clothes, style and trends.",
     "fashion clothes clothing outfit style dress shoes jewelry wear designer trend boutique "
     "wardrobe accessories jacket"),
    ("Art Interest", "Interest in making or viewing visual art.",
     "art artist paint painting draw drawing sketch gallery museum sculpture canvas mural exhibit "
     "exhibition pottery abstract portrait"),
    ("Health Concern", "Attention to physical health and medical matters.",
     "health healthy doctor hospital medicine medication diet sick illness disease injury checkup "
     "symptoms recovery nutrition wellness surgery"),
    ("Financial Management Interest", "Interest in money, budgeting and investing.",
     "money budget budgeting savings save invest investment stock finance financial bank debt "
     "loan retirement income expenses crypto"),
    ("Sports Interest", "Interest in playing or following sports.",
     "sport sports football soccer basketball baseball tennis golf hockey match league player "
     "coach championship stadium athlete volleyball"),
    ("Food Interest", "Interest in food, cooking and eating out.",
     "food cook cooking recipe bake baking dinner lunch restaurant cuisine meal chef taste "
     "delicious dish pizza pasta dessert"),
    ("Travel Interest", "Interest in trips and places.",
     "travel trip vacation journey flight abroad country countries city tour tourist hotel "
     "passport beach destination backpacking"),
    ("Music Interest", "Interest in listening to or making music.",
     "music musical song guitar piano violin drum concert band sing singer album melody lyrics "
     "musician jazz orchestra choir playlist"),
    ("Literature Interest", "Interest in books, reading and writing.",
     "book books read reading novel author poetry poem story stories literature library writer "
     "chapter fiction memoir bookstore"),
    ("Film Interest", "Interest in films and series.",
     "movie movies film cinema actor actress director series netflix documentary theater "
     "premiere trailer screenplay"),
    ("Social Media Activity", "Activity on social platforms and online sharing.",
     "instagram twitter facebook tiktok youtube post posted posting followers online blog vlog "
     "influencer media viral hashtag selfie"),
    ("Tech Interest", "Interest in technology, gadgets and software.",
     "tech technology computer software app gadget phone coding code programming programmer "
     "developer ai robot internet laptop startup digital"),
    ("Environmental Concern", "Concern for nature, climate and sustainability.",
     "environment environmental climate nature recycle recycling sustainable sustainability "
     "pollution planet green carbon plastic conservation wildlife eco ocean"),
    ("History Interest", "Interest in the past and heritage.",
     "history historical ancient war century medieval heritage archaeology civilization monument "
     "tradition historian empire"),
    ("Political Concern", "Attention to politics, rights and public affairs.",
     "politics political election vote voting government policy law rights activism activist "
     "protest campaign democracy justice equality president"),
    ("Religious Interest", "Interest in faith, religion and spirituality.",
     "religion religious faith god church pray prayer spiritual spirituality bible temple mosque "
     "worship belief"),
    ("Gaming Interest", "Interest in video and board games.",
     "game gaming gamer video console playstation xbox nintendo esports rpg multiplayer "
     "controller quest strategy steam"),
    ("Animal Concern", "Care for pets and animals.",
     "animal animals pet dog cat puppy kitten horse bird shelter rescue vet veterinarian zoo "
     "wildlife"),
    ("Emotional Expression", "How directly the user expresses emotions (direct vs restrained).",
     "emotion emotions emotional feelings cry crying tears express expression heart vent openly "
     "hug"),
    ("Sense of Humor", "Humorous vs serious tone.",
     "funny joke jokes humor humour laugh laughing hilarious lol haha meme memes sarcasm witty "
     "comedy pun"),
    ("Information Density", "Preference for detailed vs concise information.",
     "detail details detailed summary brief overview specifics facts data numbers statistics "
     "elaborate length thorough concise"),
    ("Language Style", "Formal vs casual language.",
     "formal casual slang professional informal wording vocabulary grammar phrasing emoji jargon "
     "colloquial tone"),
    ("Practicality", "Preference for practical advice vs theory.",
     "practical apply application applied actionable concrete theory theoretical example "
     "implement pragmatic feasible realistic"),
    ("Gardening Interest", "Interest in plants and gardens.",
     "garden gardening plant plants flower flowers seeds soil growing vegetable vegetables herbs "
     "greenhouse bloom compost harvest backyard"),
    ("Automotive Interest", "Interest in cars and motor vehicles.",
     "car cars automotive engine vehicle truck motorcycle mechanic racing garage convertible "
     "horsepower driving tire dealership"),
    ("Parenting Interest", "Interest in raising children.",
     "parenting parent toddler newborn baby diaper bedtime playdate teenager raising homeschool "
     "nursery childcare daycare"),
    ("Fitness Interest", "Interest in exercise and training.",
     "gym workout exercise fitness run running marathon yoga lifting weights training cardio jog "
     "jogging pilates crossfit"),
    ("Outdoor Adventure Interest", "Interest in hiking, camping and the outdoors.",
     "hike hiking camping camp trail mountain climbing climb kayak kayaking fishing forest lake "
     "outdoors campfire tent"),
    ("Photography Interest", "Interest in taking and editing photos.",
     "photo photos photography photographer camera picture pictures lens snapshot shoot capture "
     "tripod editing exposure"),
    ("DIY and Crafts Interest", "Interest in making things by hand.",
     "diy craft crafts handmade knit knitting sew sewing crochet woodworking scrapbook carving "
     "quilt embroidery beads"),
    ("Career Development Interest", "Interest in jobs, skills and professional growth.",
     "career job jobs promotion interview resume internship boss office coworker colleague "
     "professional skills business company hired"),
    ("Home and Decor Interest", "Interest in home making and interior design.",
     "home house apartment decor decorate furniture interior renovation renovate room kitchen "
     "couch rug cozy remodel"),
    ("Relationships and Dating Interest", "Interest in romance and partnership.",
     "dating date boyfriend girlfriend partner relationship romance romantic marriage married "
     "wedding engaged proposal anniversary breakup crush"),
    ("Volunteering and Community Interest", "Interest in volunteering and community work.",
     "volunteer volunteering community charity nonprofit fundraiser donate shelter neighborhood "
     "outreach mentoring cause"),
    ("Language Learning Interest", "Interest in learning languages.",
     "language languages spanish french german japanese chinese italian fluent bilingual "
     "vocabulary grammar duolingo translate translation accent"),
    ("Dance Interest", "Interest in dancing.",
     "dance dancing dancer ballet salsa choreography tango hiphop ballroom studio recital rhythm"),
    ("Shopping Interest", "Interest in shopping and buying things.",
     "shopping shop store mall buy bought purchase deal deals sale discount order ordered amazon "
     "brand"),
    ("Beauty and Self-Care Interest", "Interest in grooming, beauty and pampering.",
     "skincare makeup beauty salon spa hair haircut nails manicure massage pampering cosmetics "
     "lotion perfume"),
)

TRAIT_CATALOGUE: tuple[TraitDimension, ...] = tuple(
    _dimension(name, category, description, words)
    for category, rows in ((BASIC, _BASIC), (ALIGNMENT, _ALIGNMENT), (CONTENT, _CONTENT))
    for name, description, words in rows
)
TRAITS_BY_KEY: dict[str, TraitDimension] = {dim.key: dim for dim in TRAIT_CATALOGUE}
# Every word the lexicons write, as written (lowercase).
LEXICON_WORDS: frozenset[str] = frozenset(
    word for rows in (_BASIC, _ALIGNMENT, _CONTENT) for _name, _description, words in rows for word in words.split())


# Stems whose everyday senses have nothing to do with the trait that lists them: "Geoff runs the
# boatyard", "the class runs every Tuesday", "a train to Porto", "in order to". For these only the
# forms the lexicon writes count ("run", "running", "training": a person says "I run", "a long
# run"), never another word with the same stem.
AMBIGUOUS_STEMS = frozenset({"run", "train", "order", "system", "label", "lift", "structure"})


def _surface_only(text: str, lexicon_words: frozenset[str]) -> frozenset[str]:
    """The ambiguous stems of `text` that stand in it in a form the lexicon writes."""
    surface = {word.lower() for word in WORD.findall(clean_text(text))}
    return frozenset(stem(word) for word in surface & lexicon_words if stem(word) in AMBIGUOUS_STEMS)


def trait_evidence(text: str) -> list[TraitEvidence]:
    """Dimensions whose lexicon the text hits; weight = 1 - 0.5**hits over distinct stems.

    One hit is weak evidence (0.5), each further distinct hit halves what is left. An ambiguous
    stem (AMBIGUOUS_STEMS) counts only in the form the lexicon writes. Sorted by weight, strongest
    first, then by key.
    """
    stems = normalise_words(text)
    words = (stems - AMBIGUOUS_STEMS) | _surface_only(text, LEXICON_WORDS)
    found = []
    for dim in TRAIT_CATALOGUE:
        matched = tuple(sorted(dim.lexicon & words))
        if matched:
            found.append(TraitEvidence(key=dim.key, weight=1.0 - 0.5 ** len(matched),
                                       matched=matched))
    return sorted(found, key=lambda evidence: (-evidence.weight, evidence.key))


def update_trait_score(old: float, weight: float, *, rate: float = 0.3) -> float:
    """EWMA toward 1.0 by the evidence: new = old + rate · weight · (1 − old).

    Scores stay in [0, 1] and never decrease from evidence; decay, if wanted, is the caller's.
    """
    old = min(1.0, max(0.0, old))
    step = rate * min(1.0, max(0.0, weight))
    return old + step * (1.0 - old)
