"""What the statement reader (memory/engine/reading/) knows of English words: which lemmas point
at which kind of fact, and which words carry no lasting fact (moods, thinking, hedges).

Lemmas as spaCy's lemmatizer gives them, lowercase. A lemma points at its kind whatever the
sentence is built like: the parse says who the clause is about and whether it is asserted; these
sets say what it is about. Data, not rules: a new word for a kind is one more entry here.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


RELATIONS = _words("""
mother mom mum mommy mummy mam mama father dad daddy papa parent parents brother sister sibling sis bro son daughter
kid child baby twin grandmother grandma gran granny nan nana grandfather grandpa grandad granddad grandparent
grandchild grandkid grandson granddaughter aunt auntie uncle cousin niece nephew stepmother stepmom stepmum
stepfather stepdad stepson stepdaughter stepbrother stepsister stepkid stepchild godson goddaughter godmother
godfather in-law toddler
""")
PARTNERS = _words("wife husband partner boyfriend girlfriend fiance fiancee fiancé fiancée spouse hubby missus bf gf")
# Words that say a partnership (its status) without naming the partner.
PARTNERED = _words("married engaged divorced widowed single knot wed marry divorce separated")
OTHERS = _words("""
friend bestie boss colleague coworker co-worker neighbour neighbor roommate flatmate housemate mentor teacher
doctor landlord landlady manager classmate teammate mate pal buddy lad guy
""")
PET_SPECIES = _words("""
dog cat puppy pup kitten rabbit bunny hamster gerbil guinea parrot budgie cockatiel bird fish goldfish turtle
tortoise horse pony snake lizard gecko ferret chicken hen goat pet labrador lab retriever spaniel terrier poodle
collie beagle dachshund greyhound whippet husky corgi pug tabby kitty doggo pupper alpaca donkey iguana axolotl
rat mouse chinchilla hedgehog
""")
DIET_LABELS = {"vegetarian": "vegetarian", "veggie": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
               "pescetarian": "pescatarian", "keto": "keto", "paleo": "paleo", "carnivore": "carnivore",
               "halal": "halal", "kosher": "kosher", "teetotal": "teetotal", "teetotaler": "teetotal",
               "teetotaller": "teetotal", "sober": "sober", "plant-based": "vegan"}
OCCUPATIONS = _words("""
teacher nurse doctor engineer developer programmer coder lawyer solicitor barrister attorney accountant chef cook
baker librarian designer writer author journalist reporter student barista cashier manager electrician plumber
carpenter joiner mechanic pharmacist dentist architect scientist researcher professor lecturer firefighter
paramedic pilot driver farmer photographer editor consultant analyst therapist counselor counsellor tutor waiter
waitress receptionist clerk secretary banker salesperson translator interpreter vet veterinarian midwife surgeon
cleaner gardener butcher florist tailor artist musician actor actress freelancer physiotherapist physio optician
optometrist psychologist psychiatrist paralegal bartender bricklayer builder welder roofer painter decorator
hairdresser barber stylist beautician carer caregiver nanny childminder postman postwoman courier trucker
technician officer soldier sailor marine policeman policewoman detective guard firefighter fisherman miner
entrepreneur founder ceo cto director administrator admin assistant intern apprentice trainee researcher
statistician economist actuary auditor broker realtor estate agent surveyor planner pastor priest vicar rabbi
imam minister chaplain coach trainer instructor dj producer animator illustrator copywriter marketer recruiter
programmer dev sysadmin tester librarian archivist curator zookeeper ranger forester vintner brewer sommelier
housekeeper janitor caretaker porter mover machinist engineer operator dispatcher paramedic radiographer
sonographer phlebotomist dietitian nutritionist podcaster streamer youtuber influencer blogger novelist poet
composer conductor violinist pianist guitarist drummer singer dancer choreographer model housewife homemaker
retiree pensioner gp consultant registrar resident medic doc
""")
HEALTH = _words("""
asthma asthmatic diabetes diabetic coeliac celiac migraine epilepsy epileptic arthritis adhd autism autistic
dyslexia dyslexic dyspraxia anxiety depression depressed bipolar ocd ptsd insomnia insomniac eczema psoriasis
tinnitus deaf blind colourblind colorblind pregnant pregnancy cancer chemo chemotherapy surgery diagnose diagnosis
condition disease disorder syndrome injury injure wheelchair crutch medication meds medicine pill insulin inhaler
therapy cholesterol thyroid kidney liver hearing sight chronic fibromyalgia lupus crohn ibs covid anaemia anemia
anaemic anemic hypertension pacemaker transplant dialysis physio physiotherapy prosthetic amputee hernia scoliosis
concussion sclerosis parkinson dementia alzheimer stroke heart knee hip spine vertigo endometriosis pcos
menopause gout sciatica acl tendon ligament migraines antidepressant sertraline metformin statin eyesight
glasses vision contact lenses hearing-aid gp
""")
ALLERGY = _words("""
allergic allergy allergen anaphylaxis anaphylactic epipen intolerant intolerance hive hives pollen hayfever latex
penicillin sting swell rash itch itchy sneeze wheeze
""")
DIET = _words("""
vegan vegetarian veggie pescatarian pescetarian keto paleo halal kosher gluten dairy lactose meat pork beef
seafood shellfish alcohol booze beer wine sober teetotal caffeine sugar carb carbs diet eat drink fast fasting
plant-based nut peanut egg fish food spicy
""")
PLACES = _words("""
home house flat apartment address neighbourhood neighborhood hometown condo bungalow cottage terrace semi
townhouse studio farmhouse maisonette loft houseboat duplex villa cabin
""")
RESIDENCE_VERBS = _words("live reside move relocate settle emigrate immigrate")
ORIGIN = _words("bear breed raise native hometown nationality citizen originally")
LANGUAGE = _words("""
speak language fluent fluently bilingual trilingual tongue native spanish french german italian portuguese dutch
english mandarin cantonese chinese japanese korean arabic hindi urdu bengali punjabi russian polish ukrainian greek
turkish swedish norwegian danish finnish welsh gaelic irish hebrew farsi persian swahili tagalog vietnamese thai
indonesian malay czech hungarian romanian catalan basque yoruba igbo zulu afrikaans sign asl bsl
""")
WORK = _words("""
work job employ employer company firm office shift career hire retire retired unemployed redundant freelance
self-employed business intern internship promotion salary boss colleague client contract startup nhs hospital
clinic factory warehouse shop store restaurant pharmacy bank school agency
""")
EDUCATION = _words("""
study student degree university uni college school graduate graduation major phd doctorate masters master
bachelor bachelors course exam thesis dissertation semester term apprenticeship apprentice gcse a-level diploma
module lecture campus sixth-form freshman sophomore junior senior
""")
PLAN_NOUNS = _words("""
flight trip holiday vacation appointment interview surgery operation wedding exam move visit conference concert
match race marathon party meeting deadline due checkup scan gig ceremony graduation festival tour honeymoon
cruise booking
""")
HOBBY = _words("""
hobby pastime club team league play paint draw knit crochet sew bake garden gardening hike climb boulder boulder
bouldering climbing run jog swim cycle bike ride surf ski snowboard skate dance sing fish hunt camp sail row kayak
canoe collect photograph photography game gaming meditate yoga pilates train lift box fence golf volunteer brew
chess football soccer tennis basketball rugby cricket hockey netball volleyball badminton squash baseball guitar
piano violin drums cello ukulele bass saxophone trumpet flute pottery woodwork woodworking crossfit gym marathon
triathlon parkrun choir orchestra band birdwatching birding karate judo taekwondo jiu-jitsu jiujitsu boxing
archery fishing hiking running swimming cycling skiing surfing dancing singing reading writing quilting
scrapbooking sketch sketching ballet salsa tango trek trekking allotment gamer runner climber cyclist swimmer
hiker knitter baker reader
""")
PREFERENCE_VERBS = {"love": "+", "like": "+", "enjoy": "+", "adore": "+", "prefer": "+", "fancy": "+",
                    "hate": "-", "dislike": "-", "detest": "-", "loathe": "-", "despise": "-", "stand": "-"}
PREFERENCE_WORDS = {"favourite": "+", "favorite": "+", "fav": "+", "fave": "+", "fond": "+", "keen": "+", "fan": "+",
                    "obsessed": "+", "passionate": "+", "addicted": "+", "into": "+", "pleasure": "+",
                    "weakness": "+", "thing": "+", "sucker": "+", "big": "+", "heaven": "+", "jam": "+"}
POSSESSIONS = _words("""
car bike bicycle motorbike motorcycle scooter van truck pickup boat yacht caravan campervan phone iphone android
laptop computer pc mac macbook tablet ipad camera console ps5 playstation xbox switch kindle tesla toyota honda
ford bmw audi volkswagen vw subaru mazda nissan volvo house cottage cabin allotment piano guitar drone
""")
ROUTINE = _words("""
every each usually always normally typically daily nightly weekly morning evening night weekday weekend commute
wake sleep bed bedtime alarm routine early
""")
IDENTITY = _words("name call nickname birthday age old gender pronoun")
# Lemmas whose clause says what someone thinks, wants or does to a conversation, not a lasting fact.
NON_FACT_VERBS = _words("""
think guess reckon believe suppose wonder know mean understand see hope wish want need try remember forget
agree say tell ask thank appreciate mind bet assume imagine figure realise realize notice let check look wait hear
wonder trust
""")
# How a clause says it is not sure of itself, or would rather not be taken at its word.
HEDGE_HEADS = _words("think guess reckon believe suppose bet figure say feel swear admit know")
SURE_WORDS = _words("sure certain positive convinced confident")
WISH_VERBS = _words("hope wish dream daydream want fantasize fantasise imagine consider")
# Verbs that report what someone else holds true ("my mum says I'm stubborn").
REPORTING = _words("say think tell reckon believe claim insist mention assume joke complain announce feel reckon keep")
SPECULATIVE = _words("maybe perhaps someday possibly hopefully ideally")
MOODS = _words("""
tired exhausted hungry thirsty bored sleepy sad happy glad excited stressed nervous worried upset angry annoyed
frustrated confused fine good great ok okay alright well busy late ready done sorry curious lonely grumpy cold hot
full drunk knackered shattered chuffed gutted thrilled pumped stoked bummed overwhelmed relieved grateful thankful
proud scared afraid terrified jealous embarrassed hangry sick poorly ill rough wiped beat
""")
NOW_WORDS = _words("today tonight now currently moment morning afternoon evening yesterday")
# Nouns a "have" or "need" names without saying anything lasting ("I have a question").
IDLE_OBJECTS = _words("""
question idea problem issue thought point clue time chance moment minute second day week look go try feeling
question doubt headache cold plan meeting call chat lot bit way thing stuff something anything nothing everything
""")
# Verbs of what one does for an hour, not for a living ("I'm having lunch at Luigi's now").
PASTIMES = _words("""
eat drink have celebrate relax chill sit stay sleep rest shop watch visit meet wait queue sunbathe
""")
CHANGE_WORDS = _words("""
move relocate quit leave start switch change become stop retire split divorce marry engage now anymore longer
new finally since turn recently just replace adopt actually sorry meant typo correction misspoke wrong autocorrect
""")
PAST_MARKERS = _words("used childhood kid child ago formerly previously once")
# What one joins that is no employer ("joined a chess club").
GROUPS = _words("""
club group team class classes gym band choir community league course workshop program programme society circle
meetup forum movement cause party crew squad platform tournament server guild
""")
# What a person asks the assistant to do, said in the verb's bare form ("set a reminder for 5pm").
REQUEST_VERBS = _words("""
set remind book add schedule call text send find show tell give write make translate explain plan suggest recommend
check help play list summarise summarize draft compose create generate describe cancel order
""")
# Asking memory to let something go: a verb of forgetting said to the assistant, or a verb of
# keeping said to it with a "don't" (memory/engine/reading/requests.py).
FORGETTING = _words("""
forget erase delete remove wipe unlearn scrub purge clear disregard ignore scrap bin unremember scratch strike expunge
""")
KEEPING = _words("""
remember store save keep record note write log memorize memorise retain hold file jot track add put learn commit hang
""")
# "keep that between us", "keep it to yourself", "off the record": not to be kept at all.
PRIVATE = _words("between private secret quiet yourself confidential record")
# Verbs that hold something as private when said with one of those: "keep it quiet", "treat this as
# confidential", "consider that private".
CONFIDING = _words("keep treat consider mark hold")
# What one tells: "pretend I never told you / typed it / brought it up".
TELLING = _words("tell say mention hear happen type write share bring")
